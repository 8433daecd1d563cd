// Reads a config section's keys from YAML by its table of base::ConfigKey rows: each row's key
// is read as its member's type (a size_t member as a byte size, an enum member by its names).
// Ranges are not checked here but by the section's Validate, from the same rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "base/config_key.h"
#include "server/config/yaml_reader.h"

namespace kvd::server {

template <typename Section>
void ReadConfigKeys(YamlMapReader& reader, std::span<const base::ConfigKey<Section>> keys,
                    Section& section) {
  for (const base::ConfigKey<Section>& key : keys) {
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), base::EnumMember<Section>>) {
            std::string name;
            if (!reader.Read(key.name, &name)) return;
            // The choices are checked before the name is set: Validate sees only the value.
            const std::string path = reader.PathOf(key.name);
            if (absl::Status status = base::CheckText(path, key.text, name); !status.ok()) {
              reader.Fail(key.name, std::string(status.message().substr(path.size() + 2)));
            } else if (!member.set(section, name)) {
              reader.Fail(key.name, "is not a name this key takes");
            }
          } else if constexpr (std::is_same_v<std::decay_t<decltype(section.*member)>, size_t>) {
            reader.ReadByteSize(key.name, &(section.*member));
          } else {
            reader.Read(key.name, &(section.*member));
          }
        },
        key.member);
  }
}

template <typename Section, size_t N>
void ReadConfigKeys(YamlMapReader& reader, const base::ConfigKey<Section> (&keys)[N],
                    Section& section) {
  ReadConfigKeys(reader, base::KeysOf(keys), section);
}

}  // namespace kvd::server
