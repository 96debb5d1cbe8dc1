// A small DOM over expat for the regress tests that parse their XML output
// (JUnit, SVG) back; `ok` false for malformed XML.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <expat.h>

namespace kiln::regress::testing {

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text; // character data directly inside, children's excluded
  std::vector<Element> children;

  std::string attr(const std::string& key) const {
    const auto it = attrs.find(key);
    return it == attrs.end() ? "" : it->second;
  }
};

struct Parsed {
  bool ok = false;
  std::string error;
  Element root;
};

inline Parsed ParseXml(const std::string& xml) {
  struct State {
    std::vector<Element*> stack;
    Element root;
    bool started = false;
  } st;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &st);
  XML_SetElementHandler(
      p,
      [](void* data, const XML_Char* name, const XML_Char** attrs) {
        auto* s = static_cast<State*>(data);
        Element e;
        e.name = name;
        for (int i = 0; attrs[i] != nullptr; i += 2) e.attrs[attrs[i]] = attrs[i + 1];
        if (!s->started) {
          s->root = e;
          s->started = true;
          s->stack.push_back(&s->root);
        } else {
          s->stack.back()->children.push_back(e);
          s->stack.push_back(&s->stack.back()->children.back());
        }
      },
      [](void* data, const XML_Char*) { static_cast<State*>(data)->stack.pop_back(); });
  XML_SetCharacterDataHandler(p, [](void* data, const XML_Char* s, int len) {
    auto* st = static_cast<State*>(data);
    if (!st->stack.empty()) st->stack.back()->text.append(s, static_cast<size_t>(len));
  });
  Parsed out;
  out.ok = XML_Parse(p, xml.data(), static_cast<int>(xml.size()), 1) == XML_STATUS_OK;
  if (!out.ok) out.error = XML_ErrorString(XML_GetErrorCode(p));
  XML_ParserFree(p);
  out.root = st.root;
  return out;
}

inline std::vector<const Element*> Children(const Element& e, const std::string& name) {
  std::vector<const Element*> out;
  for (const Element& c : e.children) {
    if (c.name == name) out.push_back(&c);
  }
  return out;
}

// Children of `e` named `name` with class `cls`.
inline std::vector<const Element*> WithClass(const Element& e, const std::string& name,
                                             const std::string& cls) {
  std::vector<const Element*> out;
  for (const Element* c : Children(e, name)) {
    if (c->attr("class") == cls) out.push_back(c);
  }
  return out;
}

} // namespace kiln::regress::testing
