#!/usr/bin/env python3
"""Lists public declarations of the installed headers that have no /// comment.

Checked: every *.hpp under base/ sparse/ solvers/ precond/ io/ except the cuda/ folders, a superset
of the installed headers (KRYSP_PUBLIC_HEADERS in CMakeLists.txt). A declaration counts as documented when the
line before it (template<...> lines skipped) is a /// comment, or it carries a trailing ///<.
Checked: functions, classes, structs, enums and aliases at namespace scope and in the public part
of classes; not data members, detail/internal namespaces, deleted/defaulted special members, or overrides
(documented at the interface they implement).

    scripts/check_api_docs.py [repo-root]     exit 1 and one line per finding when any is missing
"""
import pathlib
import re
import sys

DIRS = ["base", "sparse", "solvers", "precond", "io"]
SKIP_NAMESPACES = {"detail", "lobpcg_detail", "spmv_rule", "spmm_rule"}


def headers(root):
    for d in DIRS:
        for p in sorted((root / d).rglob("*.hpp")):
            if "cuda" not in p.relative_to(root).parts:
                yield p


def strip_comment(line):
    return re.sub(r"//.*", "", line).strip()


def is_declaration(code):
    """Is this statement start something that must be documented?"""
    if not code or code.startswith(("#", "}", "{", "public:", "private:", "protected:", "friend ",
                                    "static_assert", "return", "using namespace", "extern template",
                                    "template class", "namespace")):
        return False
    if re.match(r"^(class|struct|enum( class)?)\s+\w+\s*;", code):  # forward declaration
        return False
    if re.match(r"^(class|struct|enum( class)?)\b", code) or code.startswith("using "):
        return True
    if re.search(r"\boverride\b", code):  # documented where the interface declares it
        return False
    if "= delete" in code or "= default" in code or re.match(r"^~", code):
        return False
    if re.search(r"\w+(<[\w, ]+>)?::~?\w+\s*\(", code.split("(")[0] + "("):  # out-of-class definition
        return False
    if re.match(r"^(inline\s+)?constexpr\b", code) or re.match(r"^inline constexpr\b", code):
        return True
    return "(" in code and not code.startswith(("if", "for", "while", "KRYSP_"))


def check(path):
    findings = []
    lines = path.read_text().splitlines()
    stack = []  # 'ns', 'skip-ns', 'pub', 'priv', 'body'
    prev_doc = False  # the previous meaningful line was a /// comment
    stmt_start = True
    pending_class = None  # the last statement opened a class/struct/enum: which kind
    continued = False  # inside a multi-line macro
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        was_continued, continued = continued, raw.rstrip().endswith("\\")
        if was_continued:
            continue
        if not line:
            prev_doc = False
            continue
        if line.startswith("///") or line.startswith("/**") or (line.startswith("*") and prev_doc):
            prev_doc = True
            continue
        if line.startswith("//"):
            continue
        code = strip_comment(line)
        if line.startswith("template") and code.endswith(">"):
            continue  # the declaration is on the next line; keep prev_doc
        top = stack[-1] if stack else "ns"
        checked_scope = top in ("ns", "pub")
        if top in ("pub", "priv") and code in ("public:", "private:", "protected:"):
            stack[-1] = "pub" if code == "public:" else "priv"
            prev_doc = False
            continue
        if stmt_start and checked_scope and is_declaration(code) and not prev_doc and "///<" not in line:
            findings.append(f"{path}:{no}: {code[:90]}")
        # Track scopes through the braces on this line.
        for ch in code:
            if ch == "{":
                m_ns = re.match(r"^namespace\s+([\w:]*)", code)
                m_cls = re.match(r"^(template\s*<.*>\s*)?(class|struct|union|enum)\b", code)
                if top in ("skip-ns",) or top in ("body", "priv"):
                    stack.append("body" if top != "skip-ns" or not m_ns else "skip-ns")
                elif m_ns:
                    stack.append("skip-ns" if m_ns.group(1).split("::")[-1] in SKIP_NAMESPACES else "ns")
                elif m_cls and "(" not in code.split("{")[0]:
                    kind = m_cls.group(2)
                    stack.append("body" if kind == "enum" else ("priv" if kind == "class" else "pub"))
                elif pending_class and "(" not in code:
                    stack.append("body" if pending_class == "enum" else ("priv" if pending_class == "class" else "pub"))
                else:
                    stack.append("body")
                top = stack[-1]
                pending_class = None
            elif ch == "}":
                if stack:
                    stack.pop()
                top = stack[-1] if stack else "ns"
        m = re.match(r"^(template\s*<.*>\s*)?(class|struct|enum( class)?)\s+\w+[^;{(]*$", code)
        pending_class = m.group(2).split()[0] if m else None
        stmt_start = code.endswith((";", "{", "}", ":")) or code.startswith("#")
        prev_doc = False
    return findings


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    findings = [f for h in headers(root) for f in check(h)]
    for f in findings:
        print(f)
    print(f"{len(findings)} undocumented public declarations", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
