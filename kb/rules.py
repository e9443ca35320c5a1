"""The linter's rules: a stable code, a short name and the statement a contributor reads.

Codes never change meaning once published; a retired rule keeps its number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    statement: str


RULES = {rule.code: rule for rule in [
    Rule("KB001", "utf8", "An entry file is readable UTF-8 text."),
    Rule("KB002", "no-bom", "An entry file does not start with a byte-order mark."),
    Rule("KB003", "yaml-syntax", "An entry file is well-formed YAML."),
    Rule("KB004", "top-mapping", "The top level of an entry is a mapping of fields."),
    Rule("KB005", "duplicate-key", "A key appears at most once in a mapping."),
    Rule("KB006", "plain-yaml", "Only plain YAML types are used: no tags that construct objects."),
    Rule("KB007", "no-aliases", "No YAML anchors or aliases: every value is written out."),
    Rule("KB008", "shallow", "Nesting stays within 12 levels."),
    Rule("KB009", "file-size", "One entry file is at most 256 KiB."),
    Rule("KB010", "id-form", "The file name (the cell id) is lowercase words, digits and hyphens, ending in .yaml."),
    Rule("KB011", "id-not-repeated", "The id is the file name and is not written inside the file."),
    Rule("KB020", "required", "Every required field is present."),
    Rule("KB021", "known-field", "Only fields of the schema are used (see `kb schema`)."),
    Rule("KB022", "type", "Each field has the type the schema gives it (text, number, list, mapping)."),
    Rule("KB023", "choice", "Fields with a fixed set of values use one of them."),
    Rule("KB024", "length", "Text and lists stay within their length limits and patterns."),
    Rule("KB025", "not-blank", "Text fields are not empty or only whitespace."),
    Rule("KB026", "trimmed", "Plain text does not start or end with whitespace."),
    Rule("KB027", "value-or-series", "A measurement has exactly one of a single value or a series of rows."),
    Rule("KB028", "link-state", "An upstream link's state fits its kind (a PR can be merged, an issue cannot)."),
    Rule("KB029", "valid-value", "A value passes its field's check."),
    Rule("KB030", "literal-exact", "A literal signature is one line with no tabs and no leading or trailing spaces."),
    Rule("KB031", "no-controls", "Text has no control characters or bidirectional overrides."),
    Rule("KB032", "unique-signature", "A cell lists each signature text once."),
    Rule("KB033", "public-link", "Links are https URLs of a known public tracker form (GitHub issue, PR, commit, release, docs)."),
    Rule("KB034", "date", "Dates are real, written YYYY-MM-DD (or YYYY-MM for an as-of month), and not in the future."),
    Rule("KB035", "version", "Version ranges are PEP 440 specifiers and versions are PEP 440 versions."),
    Rule("KB036", "related-exists", "A related id names an existing cell."),
    Rule("KB037", "related-not-self", "A cell is not related to itself."),
    Rule("KB038", "unique-id", "Two entry files do not share one id."),
    Rule("KB039", "dates-ordered", "A cell's 'updated' date is not before its 'published' date."),
    Rule("KB040", "own-primary", "A cell's first signature is its own: no other cell lists the same text."),
    Rule("KB041", "unique-url", "Two different signature texts never share one URL slug."),
    Rule("KB042", "no-raw-html", "Markdown prose has no raw HTML; code goes in backticks."),
    Rule("KB043", "https-links", "Links inside Markdown prose are https URLs."),
    Rule("KB044", "placeholder-grammar", "A signature's match pattern uses only the placeholders {int} {num} {hex} {size} {path} {pid} {id} {rest}, never touching, {rest} last."),
    Rule("KB045", "pattern-fits-text", "A signature's match pattern matches the signature's own literal text."),
]}


def code_of_pydantic(error_type: str) -> str:
    """The rule a built-in pydantic error breaks."""
    if error_type.startswith("KB"):
        return error_type
    if error_type == "missing":
        return "KB020"
    if error_type == "extra_forbidden":
        return "KB021"
    if error_type in {"literal_error", "enum"}:
        return "KB023"
    if error_type in {"string_too_long", "string_too_short", "too_long", "too_short", "string_pattern_mismatch"}:
        return "KB024"
    if error_type.endswith("_type") or error_type in {"model_attributes_type", "is_instance_of", "dict_type"}:
        return "KB022"
    return "KB029"
