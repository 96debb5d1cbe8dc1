"""A small renderer for the subset of Helm's Go templates that deploy/helm/kiln uses.

Helm is not packaged for Debian, so CI renders the chart with this instead. It supports
exactly what the chart's templates use, and fails on anything else rather than guess:

  {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Chart.AppVersion }}  {{ "literal" }}  {{ . }}
  {{ include "name" . }}   {{ define "name" }}...{{ end }}   {{/* comment */}}
  {{ if PIPELINE }} ... {{ else }} ... {{ end }}   with `not X` as a condition
  pipelines through quote, toYaml, nindent N, indent N, trunc N, trimSuffix "s"
  {{- and -}} trimming of the whitespace before / after an action

A missing key is an error (Helm would print "<no value>"), so a template that names a value
that values.yaml lacks fails here.
"""

import re

import yaml


class TemplateError(Exception):
    pass


# An action; string literals in it may hold braces ({{ "}}" }}).
_ACTION = re.compile(r'\{\{(-?)\s*((?:"(?:[^"\\]|\\.)*"|[^"])*?)\s*(-?)\}\}', re.S)


def _lex(text, source):
    """Text and action tokens, with Helm's whitespace trimming applied."""
    tokens = []
    pos = 0
    for m in _ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if m.group(1) == "-":
            chunk = chunk.rstrip()
        tokens.append(("text", chunk))
        tokens.append(("action", m.group(2), m.group(3) == "-", source))
        pos = m.end()
    tokens.append(("text", text[pos:]))
    out = []
    trim_next = False
    for t in tokens:
        if t[0] == "text":
            out.append(("text", t[1].lstrip() if trim_next else t[1]))
            trim_next = False
        else:
            out.append(t[:2] + (t[3],))
            trim_next = t[2]
    return out


def _parse(tokens, i=0, closers=()):
    """Nodes until one of `closers` ('end', 'else'); returns (nodes, index, closer)."""
    nodes = []
    while i < len(tokens):
        t = tokens[i]
        if t[0] == "text":
            nodes.append(("text", t[1]))
            i += 1
            continue
        body, source = t[1], t[2]
        if body.startswith("/*"):
            if not body.endswith("*/"):
                raise TemplateError(f"{source}: unterminated comment")
            i += 1
            continue
        word = body.split(None, 1)[0] if body else ""
        if word in ("end", "else"):
            if word not in closers:
                raise TemplateError(f"{source}: unexpected {{{{ {word} }}}}")
            return nodes, i + 1, word
        if word == "if":
            then, i, closer = _parse(tokens, i + 1, ("end", "else"))
            other = []
            if closer == "else":
                other, i, closer = _parse(tokens, i, ("end",))
            if closer != "end":
                raise TemplateError(f"{source}: {{{{ if }}}} without {{{{ end }}}}")
            nodes.append(("if", body[2:].strip(), then, other, source))
            continue
        if word == "define":
            name = _string(body[6:].strip(), source)
            inner, i, closer = _parse(tokens, i + 1, ("end",))
            if closer != "end":
                raise TemplateError(f"{source}: {{{{ define }}}} without {{{{ end }}}}")
            nodes.append(("define", name, inner))
            continue
        if word in ("range", "with", "template", "block", "tpl"):
            raise TemplateError(f"{source}: '{word}' is outside the supported subset")
        nodes.append(("action", body, source))
        i += 1
    if closers:
        raise TemplateError(f"missing {{{{ end }}}} (expected one of {closers})")
    return nodes, i, None


def _string(token, source):
    if len(token) >= 2 and token[0] == token[-1] == '"':
        return token[1:-1].encode().decode("unicode_escape")
    raise TemplateError(f"{source}: expected a string literal, got {token!r}")


def _words(command, source):
    words = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', command)
    if not words:
        raise TemplateError(f"{source}: empty command")
    return words


def _split_pipeline(text):
    parts, cur, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "|" and not quoted:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def _truthy(v):
    return not (v is None or v is False or v == 0 or v == "" or v == [] or v == {})


def _text(v, source):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise TemplateError(f"{source}: {type(v).__name__} value printed without toYaml")


class Chart:
    def __init__(self, helpers_text, helpers_name="_helpers.tpl"):
        self.defines = {}
        nodes, _, _ = _parse(_lex(helpers_text, helpers_name))
        self._collect(nodes)

    def _collect(self, nodes):
        for n in nodes:
            if n[0] == "define":
                self.defines[n[1]] = n[2]

    def render(self, text, context, source):
        nodes, _, _ = _parse(_lex(text, source))
        self._collect(nodes)
        return self._run(nodes, context)

    def _run(self, nodes, dot):
        out = []
        for n in nodes:
            if n[0] == "text":
                out.append(n[1])
            elif n[0] == "action":
                out.append(_text(self._pipeline(n[1], dot, n[2]), n[2]))
            elif n[0] == "if":
                branch = n[2] if _truthy(self._pipeline(n[1], dot, n[4])) else n[3]
                out.append(self._run(branch, dot))
        return "".join(out)

    def _value(self, word, dot, source):
        if word == ".":
            return dot
        if word.startswith("."):
            v = dot
            for key in word[1:].split("."):
                if not isinstance(v, dict) or key not in v:
                    raise TemplateError(f"{source}: {word}: no key '{key}'")
                v = v[key]
            return v
        if word.startswith('"'):
            return _string(word, source)
        if re.fullmatch(r"-?[0-9]+", word):
            return int(word)
        if word in ("true", "false"):
            return word == "true"
        raise TemplateError(f"{source}: unsupported argument {word!r}")

    def _pipeline(self, text, dot, source):
        value = None
        for k, command in enumerate(_split_pipeline(text)):
            words = _words(command, source)
            fn, args = words[0], [self._value(w, dot, source) for w in words[1:]]
            if k > 0:
                args.append(value)
            if k == 0 and fn not in ("include", "not", "quote", "toYaml"):
                if len(words) != 1:
                    raise TemplateError(f"{source}: unsupported command {command!r}")
                value = self._value(fn, dot, source)
            elif fn == "include":
                if len(args) != 2 or args[0] not in self.defines:
                    raise TemplateError(f"{source}: include of an undefined template {words[1]}")
                value = self._run(self.defines[args[0]], args[1])
            elif fn == "not":
                value = not _truthy(args[-1])
            elif fn == "quote":
                value = '"' + _text(args[-1], source).replace("\\", "\\\\").replace('"', '\\"') + '"'
            elif fn == "toYaml":
                value = yaml.safe_dump(args[-1], default_flow_style=False, sort_keys=True).rstrip("\n")
            elif fn in ("nindent", "indent"):
                pad = " " * args[0]
                body = "\n".join(pad + line if line else line for line in str(args[1]).split("\n"))
                value = ("\n" if fn == "nindent" else "") + body
            elif fn == "trunc":
                value = str(args[1])[: args[0]]
            elif fn == "trimSuffix":
                s = str(args[1])
                value = s[: -len(args[0])] if args[0] and s.endswith(args[0]) else s
            else:
                raise TemplateError(f"{source}: function '{fn}' is outside the supported subset")
        return value


def values_references(text):
    """Every .Values.a.b path a template names (in any branch)."""
    return re.findall(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", text)


def deep_merge(base, override):
    out = dict(base)
    for k, v in override.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
