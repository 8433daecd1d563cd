// How a constrained JSON text may space its tokens.
#pragma once

namespace kvd::structured {

enum class JsonWhitespace {
  // As OpenAI's strict outputs and the project's own replies: no line break, no indentation, at
  // most one space after each ':' and ','. The default: a model unsure of a value cannot spend
  // its tokens on indentation.
  kCompact,
  // Whitespace around every token as well: a space, or a line break and a bounded indent, so
  // pretty-printed JSON fits too.
  kAny,
};

}  // namespace kvd::structured
