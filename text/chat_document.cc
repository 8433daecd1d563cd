// Document placement at the start of a chat's first system (or user) message, and the split of the
// rendered prompt right after the document.
#include "text/chat_document.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/enum_names.h"
#include "base/status_macros.h"

namespace kvd::text {
namespace {

constexpr auto kDocumentRoleNames = base::MakeEnumNames<DocumentRole>({
    {DocumentRole::kSystem, "system"},
    {DocumentRole::kUser, "user"},
});

using OrderedJson = nlohmann::ordered_json;

bool IsSystemMessage(const OrderedJson& message) {
  const auto role = message.find("role");
  return role != message.end() && role->is_string() && (*role == "system" || *role == "developer");
}

bool HasRole(const OrderedJson& message, std::string_view role) {
  const auto found = message.find("role");
  return found != message.end() && found->is_string() && *found == role;
}

// `messages` with `lead` (the document, possibly followed by a marker) at the start of the
// first system (or user) message.
absl::StatusOr<OrderedJson> PlaceDocument(const std::string& lead, const OrderedJson& messages,
                                          DocumentRole role) {
  if (!messages.is_array()) return absl::InvalidArgumentError("messages must be a JSON array");
  for (const OrderedJson& message : messages) {
    if (!message.is_object()) return absl::InvalidArgumentError("each message must be an object");
  }
  const bool user_role = role == DocumentRole::kUser;
  const std::string role_name(DocumentRoleName(role));
  if (user_role && !messages.empty() && IsSystemMessage(messages[0])) {
    return absl::InvalidArgumentError(
        "documents open the user turn on this server, so a conversation with a document "
        "cannot start with a system message");
  }
  OrderedJson placed = OrderedJson::array();
  size_t rest = 0;
  const bool joins_first = !messages.empty() && (user_role ? HasRole(messages[0], "user")
                                                           : IsSystemMessage(messages[0]));
  if (joins_first) {
    OrderedJson first = messages[0];
    const auto content = first.find("content");
    if (content == first.end() || !content->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", role_name, " message that follows a document must have string content"));
    }
    first["role"] = role_name;
    first["content"] = absl::StrCat(lead, "\n\n", content->get<std::string>());
    placed.push_back(std::move(first));
    rest = 1;
  } else {
    placed.push_back(OrderedJson{{"role", role_name}, {"content", lead}});
  }
  for (size_t i = rest; i < messages.size(); ++i) placed.push_back(messages[i]);
  return placed;
}

// A marker that occurs nowhere in the inputs, so finding it in the output locates the end of
// the document. Private-use characters keep it clear of anything a template matches on.
std::string UniqueMarker(std::string_view document, const OrderedJson& messages,
                         const OrderedJson& extra) {
  // dump() throws on invalid UTF-8 unless told to replace it.
  auto dump = [](const OrderedJson& json) {
    return json.dump(-1, ' ', /*ensure_ascii=*/false, OrderedJson::error_handler_t::replace);
  };
  const std::string inputs = absl::StrCat(std::string(document), dump(messages), dump(extra));
  std::string marker = "\xEE\x80\x80kvd-document-end\xEE\x80\x80";
  for (int i = 0; inputs.find(marker) != std::string::npos; ++i) {
    marker = absl::StrCat("\xEE\x80\x80kvd-document-end-", i, "\xEE\x80\x80");
  }
  return marker;
}

// Renders `messages` with the document followed by `marker` and cuts the output at the marker.
absl::StatusOr<DocumentChat> RenderSplit(const ChatTemplate& chat_template,
                                         const std::string& document, const std::string& marker,
                                         const OrderedJson& messages, bool add_generation_prompt,
                                         const OrderedJson& extra, DocumentRole role) {
  KVD_ASSIGN_OR_RETURN(OrderedJson placed, PlaceDocument(document + marker, messages, role));
  KVD_ASSIGN_OR_RETURN(std::string rendered,
                       chat_template.Render(placed, add_generation_prompt, extra));
  const size_t at = rendered.find(marker);
  if (at == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("the chat template does not put the ",
                                                   DocumentRoleName(role),
                                                   " message's content in the prompt"));
  }
  if (rendered.find(marker, at + marker.size()) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("the chat template repeats the ",
                                                   DocumentRoleName(role),
                                                   " message's content in the prompt"));
  }
  return DocumentChat{rendered.substr(0, at), rendered.substr(at + marker.size())};
}

OrderedJson Message(const char* role, const char* content) {
  return OrderedJson{{"role", role}, {"content", content}};
}

}  // namespace

const char* DocumentRoleName(DocumentRole role) { return kDocumentRoleNames.Name(role).data(); }

absl::StatusOr<DocumentRole> ParseDocumentRole(std::string_view name) {
  return kDocumentRoleNames.Parse(name, "document role");
}

absl::StatusOr<OrderedJson> MessagesWithDocument(std::string_view document,
                                                 const OrderedJson& messages, DocumentRole role) {
  return PlaceDocument(std::string(document), messages, role);
}

absl::StatusOr<DocumentChat> SplitDocumentChat(const ChatTemplate& chat_template,
                                               std::string_view document,
                                               const OrderedJson& messages,
                                               bool add_generation_prompt, const OrderedJson& extra,
                                               DocumentRole role) {
  if (document.empty()) return absl::InvalidArgumentError("the document is empty");
  const std::string text(document);
  const std::string marker = UniqueMarker(document, messages, extra);
  KVD_ASSIGN_OR_RETURN(DocumentChat split, RenderSplit(chat_template, text, marker, messages,
                                                       add_generation_prompt, extra, role));
  KVD_ASSIGN_OR_RETURN(OrderedJson placed, PlaceDocument(text, messages, role));
  KVD_ASSIGN_OR_RETURN(std::string plain,
                       chat_template.Render(placed, add_generation_prompt, extra));
  // A template that trims, escapes or inspects the content renders it differently once the
  // marker is inside, or not verbatim.
  if (split.prefix + split.suffix != plain || !split.prefix.ends_with(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the chat template does not place the ", DocumentRoleName(role),
                     " message's content verbatim, so a document's text cannot be a fixed "
                     "prompt prefix"));
  }
  // Templates that move the system text elsewhere (Mistral's into the last user turn) give a
  // prefix that changes with the conversation: try a short and a longer one, the longer with
  // a system message of its own where the document's role allows one.
  const OrderedJson system_probe = role == DocumentRole::kSystem
                                       ? OrderedJson::array({Message("system", "Answer briefly.")})
                                       : OrderedJson::array();
  OrderedJson longer = system_probe;
  for (OrderedJson message : {Message("user", "Hi"), Message("assistant", "Hello."),
                              Message("user", "What is this about?")}) {
    longer.push_back(std::move(message));
  }
  const OrderedJson probes[] = {OrderedJson::array({Message("user", "How are you?")}), longer};
  for (const OrderedJson& probe : probes) {
    absl::StatusOr<DocumentChat> other =
        RenderSplit(chat_template, text, marker, probe, add_generation_prompt, extra, role);
    if (!other.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot check that the chat template keeps a document's position: ",
                       std::string(other.status().message())));
    }
    if (other->prefix != split.prefix) {
      return absl::InvalidArgumentError(
          absl::StrCat("the chat template renders the text before the ", DocumentRoleName(role),
                       " message's content differently for different conversations, so a "
                       "document's text cannot be a fixed prompt prefix"));
    }
  }
  return split;
}

}  // namespace kvd::text
