"""An .xlsx workbook's XML bounded while it streams, before any parser builds objects
(docs/xlsform.md#limits).

openpyxl builds an object for every element it parses, so a few kilobytes of zip can hold a
million empty cells or cell formats. Here expat reads each part openpyxl would read, one event
at a time, holding counters and nothing else: no DTD and no entities (refused as defusedxml
refuses them), UTF-8 only, and the limits below, each counted as it streams. What openpyxl may
then read is a package written here with only what it needs for the cells' values: a list of
parts, the workbook's sheet list and date system, the shared strings, the sheets' cells, and a
stylesheet of our own that says only which cell formats are dates, each at the path of its role
alone (so no sheet is also read whole as a stylesheet, as document properties or as another
sheet's relationships). Themes, document properties, drawings, printer settings, comments and
the rest are left out unread.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat
from xml.sax.saxutils import quoteattr

from deniable.shared.survey import MAX_TEXT

#: XML elements in the parts read, the whole workbook together: the largest real form of the
#: tests (tests/forms) holds 56,000; 100 questions of 256 options, every label in four
#: languages, just under 500,000.
MAX_ELEMENTS = 500_000
#: Attributes in the parts read, the whole workbook together: three an element (real forms
#: have at most two and a half).
MAX_ATTRIBUTES = 1_500_000
#: Attributes (namespace declarations included) on one element, counted in its bytes before
#: expat reads it: a spreadsheet writes at most a few dozen.
MAX_ELEMENT_ATTRIBUTES = 128
#: How deep elements nest: a spreadsheet's deepest part nests about fifteen.
MAX_DEPTH = 64
#: Cells in one row, empty ones included: five times the 200 columns a sheet may use, room for
#: a row formatted past its last column.
MAX_ROW_CELLS = 1024
#: Elements inside one cell or shared string: rich text of about twenty formatted runs.
MAX_CELL_ELEMENTS = 200
#: Characters in one cell: the longest text a survey holds (a label, a note, a condition).
MAX_CELL_CHARS = MAX_TEXT
#: Cell formats in the stylesheet: Excel's own maximum.
MAX_CELL_FORMATS = 64_000
#: Sheets in the workbook: a sheet is a file of the zip (at most 200 of them), and openpyxl
#: parses each listed sheet's XML as it opens the workbook.
MAX_SHEETS = 200
#: Entries in the lists openpyxl reads whole (the package's files and relationships, the
#: workbook's sheets): a workbook of 200 files lists a few hundred.
MAX_LIST_ELEMENTS = 10_000
#: Bytes of XML not yet parsed into an event (one tag, comment or declaration being read):
#: a tag of a spreadsheet is far shorter, and a cell's text is read as it comes.
MAX_TOKEN_BYTES = 1024 * 1024

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_CONTENT_TYPES = "http://schemas.openxmlformats.org/package/2006/content-types"
_PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOCUMENT_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
#: The workbook's content types, in the order openpyxl looks for them (_find_workbook_part).
_WORKBOOK_TYPES = (
    "application/vnd.ms-excel.template.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml",
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
)
_SHARED_STRINGS = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
_WORKSHEET = _DOCUMENT_RELS + "/worksheet"
_STYLES = "xl/styles.xml"  # openpyxl reads the stylesheet at this path, whatever the lists say
_CONTENT_TYPES_PART = "[Content_Types].xml"
#: Where the package written for openpyxl holds the workbook, its relationships and strings.
_WORKBOOK_PART = "xl/workbook.xml"
_WORKBOOK_RELS_PART = "xl/_rels/workbook.xml.rels"
_SHARED_STRINGS_PART = "xl/sharedStrings.xml"
_PACKAGE_TYPE = "application/vnd.openxmlformats-"
_PART_TYPES = {
    _WORKBOOK_PART: _PACKAGE_TYPE + "officedocument.spreadsheetml.sheet.main+xml",
    _SHARED_STRINGS_PART: _SHARED_STRINGS,
    _STYLES: _PACKAGE_TYPE + "officedocument.spreadsheetml.styles+xml",
}
_SHEET_TYPE = _PACKAGE_TYPE + "officedocument.spreadsheetml.worksheet+xml"
_EMPTY_SHEET = f'<worksheet xmlns="{_MAIN}"><sheetData/></worksheet>'.encode()


def _main(local: str) -> str:
    return f"{_MAIN}}}{local}"  # expat's name for an element: namespace, "}", local name


_ROW, _CELL, _VALUE, _TEXT, _PHONETIC = map(_main, ("row", "c", "v", "t", "rPh"))
_SI, _SHEET_DATA, _DIMENSION = map(_main, ("si", "sheetData", "dimension"))
_SHEETS, _SHEET, _WORKBOOK_PR = map(_main, ("sheets", "sheet", "workbookPr"))
_NUM_FMTS, _NUM_FMT, _CELL_XFS, _XF = map(_main, ("numFmts", "numFmt", "cellXfs", "xf"))
_ATTRIBUTE = rb"\s+[^\s<>=/]+\s*=\s*(?:\"[^\"<]*\"|'[^'<]*')"
#: A start tag with more than MAX_ELEMENT_ATTRIBUTES attributes, found in one linear pass.
_CROWDED_TAG = re.compile(
    rb"<[^\s<>/!?][^\s<>/]*(?:" + _ATTRIBUTE + rb"){%d}" % (MAX_ELEMENT_ATTRIBUTES + 1)
)
_DECLARED_ENCODING = {"utf-8", "utf8"}
_TOO_LONG = (
    f"has more than {MAX_CELL_CHARS:,} characters, the most a cell may hold: shorten it "
    "(docs/xlsform.md#limits)"
)
_SAVE_AGAIN = "save the form again from a spreadsheet program (docs/xlsform.md#limits)"
_CHUNK = 64 * 1024


class PartError(ValueError):
    """A part of the workbook over a limit or unsafe to parse; the message says what to do."""


#: A part's start, end and text handlers (text: None when unneeded) and what ends its count.
_Handlers = tuple[
    Callable[[str, dict[str, str]], None],
    Callable[[str], None],
    Callable[[str], None] | None,
    Callable[[], None],
]


class _Stop(Exception):
    """A part openpyxl will not read: streaming it stops here."""


def require_defusedxml() -> None:
    """Refuse to read a workbook unless openpyxl parses with defusedxml (a declared dependency):
    without it openpyxl would fall back to the standard library's parser."""
    try:
        import defusedxml  # noqa: F401
        from openpyxl import xml as openpyxl_xml
    except ImportError:
        raise PartError(
            "this server cannot read XLSForms safely: the Python package defusedxml is not "
            "installed; install deniable[aggregator] (docs/xlsform.md#limits)"
        ) from None
    if not openpyxl_xml.DEFUSEDXML:
        raise PartError(
            "this server cannot read XLSForms safely: openpyxl does not use defusedxml "
            "(OPENPYXL_DEFUSEDXML is off); unset it (docs/xlsform.md#limits)"
        )


@dataclass
class Sheet:
    """A worksheet as it streamed: its name, the rows that hold a value and its header's width."""

    name: str
    path: str
    #: Numbers (from 2) of the rows holding a value in any cell, up to the first run of more
    #: than `empty_run` rows holding none, at most `rows_kept` of them.
    value_rows: list[int] = field(default_factory=list)
    #: The last column (1 = A) of row 1 that holds a value.
    header_width: int = 0


@dataclass
class Package:
    """What openpyxl may read (path -> bytes) and the worksheets, in the workbook's order."""

    parts: dict[str, bytes]
    sheets: list[Sheet]


@dataclass
class _Budget:
    elements: int = 0
    attributes: int = 0


def guard(
    members: Mapping[str, bytes],
    *,
    reads: Callable[[str, int], bool],
    empty_run: int,
    rows_kept: int,
) -> Package:
    """The package openpyxl may read, written from the parts of an .xlsx (path -> inflated
    bytes), each streamed within the limits and cut down to what gives the cells' values;
    PartError names what was over.

    `reads(name, sheets)` says whether the reader reads the sheet `name` of a workbook of
    `sheets` sheets; any other sheet becomes an empty one, its name kept and its XML unread."""
    budget = _Budget()
    types_body = members.get(_CONTENT_TYPES_PART)
    if types_body is None:
        raise PartError(
            f"not an .xlsx workbook (it has no {_CONTENT_TYPES_PART}); save the form as Excel .xlsx"
        )
    types = _Types(_CONTENT_TYPES_PART, f"the workbook's {_CONTENT_TYPES_PART}", budget)
    listing = types.run(types_body)
    workbook = types.workbook()
    sheets: list[Sheet] = []
    if workbook is None or workbook not in members:
        return Package({_CONTENT_TYPES_PART: listing}, sheets)  # openpyxl says what is missing
    rels_path = posixpath.join(
        posixpath.dirname(workbook), "_rels", posixpath.basename(workbook) + ".rels"
    )
    links: dict[str, tuple[str, str]] = {}
    if rels_path in members:
        rels = _Relationships(rels_path, f"the workbook's {rels_path}", budget)
        rels.run(members[rels_path])
        links = rels.links
    book = _Workbook(workbook, f"the workbook's {workbook}", budget)
    book.run(members[workbook])
    # openpyxl reads a package written here, every part at a path of its role alone: none of
    # the workbook's own paths, which could make a sheet also its stylesheet, its document
    # properties or another sheet's relationships (each parsed whole).
    parts: dict[str, bytes] = {}
    long_strings: set[int] = set()
    strings = types.shared_strings()
    if strings is not None and strings in members:
        sst = _Strings(strings, "the workbook's shared strings", budget)
        parts[_SHARED_STRINGS_PART] = sst.run(members[strings])
        long_strings = sst.long
    listed = []
    for name, rid in book.sheets:
        kind, target = links.get(rid, ("", ""))
        if kind == _WORKSHEET and target in members:  # openpyxl skips a sheet with no part
            listed.append((name, target))  # (charts are left out, so skipped too)
    if len(listed) > MAX_SHEETS:
        raise PartError(
            f"the workbook lists more than {MAX_SHEETS} sheets; an XLSForm needs three: copy "
            "the survey, choices and settings sheets into a new workbook (docs/xlsform.md#limits)"
        )
    read = [reads(name, len(listed)) for name, _ in listed]  # asked of each, in order
    paths: dict[str, str] = {}  # a sheet's part -> its path here (one part, one path)
    names: list[tuple[str, str]] = []  # each sheet's name and path here
    for index, ((name, target), reading) in enumerate(zip(listed, read, strict=True), start=1):
        # openpyxl parses a sheet's XML for each listing (its dimensions): a sheet not read
        # is an empty part of its own, never another's.
        path = f"xl/worksheets/sheet{index}.xml"
        if not reading:
            parts[path] = _EMPTY_SHEET
            names.append((name, path))
            continue
        if target in paths:
            names.append((name, paths[target]))
            continue
        paths[target] = path
        names.append((name, path))
        sheet = Sheet(name, target)
        stream = _Worksheet(
            target,
            f"{name} sheet",
            budget,
            sheet,
            long_strings,
            empty_run=empty_run,
            rows_kept=rows_kept,
        )
        parts[path] = stream.run(members[target])
        sheets.append(sheet)
    if long_strings:  # a text no cell of a sheet read uses
        raise PartError(
            f"a text in the workbook (shared string {min(long_strings) + 1}, in no sheet deniable "
            f"reads) {_TOO_LONG}, or delete the sheet that holds it"
        )
    if _STYLES in members:
        styles = _Styles(_STYLES, "the workbook's cell formats (xl/styles.xml)", budget)
        styles.run(members[_STYLES])
        if styles.is_stylesheet:
            parts[_STYLES] = styles.minimal()
    parts[_CONTENT_TYPES_PART] = _content_types(parts)
    parts[_WORKBOOK_RELS_PART] = _workbook_relationships([path for _, path in names])
    parts[_WORKBOOK_PART] = book.minimal([name for name, _ in names])
    return Package(parts, sheets)


def _content_types(parts: Mapping[str, bytes]) -> bytes:
    """The list of the package written for openpyxl: the workbook, then each of `parts` (sheets,
    shared strings, stylesheet) with its type."""
    listed = {_WORKBOOK_PART: _PART_TYPES[_WORKBOOK_PART]}
    listed |= {path: _PART_TYPES.get(path, _SHEET_TYPE) for path in parts}
    overrides = "".join(
        f'<Override PartName="/{path}" ContentType="{kind}"/>' for path, kind in listed.items()
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{_CONTENT_TYPES}">'
        f'<Default Extension="rels" ContentType="{_PACKAGE_TYPE}package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>'
    ).encode()


def _workbook_relationships(paths: list[str]) -> bytes:
    """The workbook's relationships written for its sheets: rId1 ... to each one's part."""
    links = "".join(
        f'<Relationship Id="rId{i}" Type="{_WORKSHEET}" Target="/{path}"/>'
        for i, path in enumerate(paths, start=1)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PACKAGE_RELS}">'
        f"{links}</Relationships>"
    ).encode()


def _check_start(where: str, body: bytes) -> None:
    """Refuse a part that starts as UTF-16 or UTF-32 would."""
    if body.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise PartError(f"{where} is encoded in UTF-32, not UTF-8; {_SAVE_AGAIN}")
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\0" in body[:4]:
        raise PartError(f"{where} is encoded in UTF-16, not UTF-8; {_SAVE_AGAIN}")


class _Stream:
    """One part read by expat within the budget; `run` gives the bytes openpyxl may read.

    The handlers are closures over plain local counters (about a microsecond an element: the
    whole budget streams in about half a second); what concerns the root and its children,
    rare, is in methods."""

    #: The root element's expat name.
    root = ""
    #: Children of the root openpyxl reads (the rest is cut out); None keeps the whole part.
    keep: frozenset[str] | None = None
    #: Most elements openpyxl may build at once from this part (None: no bound of its own).
    whole: int | None = None
    #: The deepest elements the role's `_on_start` sees (the generic handlers).
    hook_depth = 2

    def __init__(self, path: str, where: str, budget: _Budget) -> None:
        self.path, self.where, self.budget = path, where, budget
        self.place = where  # where the budget ran out, in a sentence
        self.first_child: int | None = None
        self.root_end = 0
        self.child_start: int | None = None
        self.ranges = array("q")  # start, end, start, end, ... of the kept children
        self.cut = False  # a child was cut out since the last kept one
        parser = expat.ParserCreate("UTF-8", "}", intern=None)  # no name table to grow
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._doctype
        parser.EntityDeclHandler = self._doctype
        parser.ExternalEntityRefHandler = self._doctype
        parser.XmlDeclHandler = self._declaration
        parser.buffer_text = True  # one call for a run of text, however many entities
        self.parser = parser
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def run(self, body: bytes) -> bytes:
        """Stream `body` within the limits; the bytes openpyxl may read."""
        _check_start(self.where, body)
        parser = self.parser
        parser.StartElementHandler, parser.EndElementHandler, data, done = self._handlers()
        if data is not None:
            parser.CharacterDataHandler = data
        view = memoryview(body)
        try:
            for at in range(0, len(body), _CHUNK):  # a chunk at a time: a refusal stops it all
                end = min(at + _CHUNK, len(body))
                self._check_chunk(body, at, end)
                parser.Parse(view[at:end], False)
            parser.Parse(b"", True)
            done()
        except _Stop:
            return b""
        except expat.ExpatError as exc:
            raise PartError(
                f"{self.where} is not well-formed XML ({exc}); save the form again as Excel .xlsx"
            ) from None
        if self.keep is None or self.first_child is None:
            return body
        ranges = self.ranges
        kept = b"".join(body[ranges[i] : ranges[i + 1]] for i in range(0, len(ranges), 2))
        return body[: self.first_child] + kept + body[self.root_end :]

    def _check_chunk(self, body: bytes, at: int, end: int) -> None:
        """Before expat reads body[at:end]: it is UTF-8, what expat holds unparsed stays under
        MAX_TOKEN_BYTES, and no start tag it would complete has too many attributes (expat
        builds them all before any handler sees the element)."""
        try:
            self.decoder.decode(body[at:end], final=end == len(body))
        except UnicodeDecodeError as exc:
            raise PartError(
                f"{self.where} is not UTF-8 (byte {at + exc.start:,}); {_SAVE_AGAIN}"
            ) from None
        parsed = max(self.parser.CurrentByteIndex, 0) if at else 0  # just past the last event
        if end - parsed > MAX_TOKEN_BYTES:
            raise PartError(
                f"{self.where} has a piece of XML (a tag or a comment) of more than "
                f"{MAX_TOKEN_BYTES:,} bytes (from byte {parsed:,}), which no spreadsheet writes; "
                f"{_SAVE_AGAIN}"
            )
        # A crowded tag holds no '<' but its first: one this chunk completes starts in it or at
        # the last '<' before it (earlier ones were searched with the chunks before).
        begin = body.rfind(b"<", parsed, at) if at > parsed else -1
        crowded = _CROWDED_TAG.search(body, at if begin < 0 else begin, end)
        if crowded is not None:
            raise PartError(
                f"{self.where} has an element with more than {MAX_ELEMENT_ATTRIBUTES} attributes "
                f"(at byte {crowded.start():,}); {_SAVE_AGAIN}"
            )

    def _handlers(self) -> _Handlers:
        """Start, end and text handlers that count every element and call `_on_start` for
        those no deeper than `hook_depth` (the whole part's entries counted against `whole`),
        and the function that adds the part's counts to the budget."""
        budget, me = self.budget, self
        elements, attributes, depth, listed = budget.elements, budget.attributes, 0, 0
        hook_depth, whole, keep = self.hook_depth, self.whole, self.keep
        pending = False  # a kept child ended: the next event's position is its end

        def start(name: str, attrs: dict[str, str]) -> None:
            nonlocal elements, attributes, depth, listed, pending
            elements += 1
            attributes += len(attrs)
            if elements > MAX_ELEMENTS or attributes > MAX_ATTRIBUTES:
                raise me._over_budget(elements > MAX_ELEMENTS)
            if pending:
                pending = me._close()
            depth += 1
            if depth > MAX_DEPTH:
                raise me._too_deep()
            if depth <= 2:
                me._outer(name, depth)
            if whole is not None and (keep is None or me.child_start is not None):
                listed += 1
                if listed > whole:
                    raise me._too_many_entries()
            if depth <= hook_depth:
                me._on_start(name, attrs, depth)

        def end(_name: str) -> None:
            nonlocal depth, pending
            if pending:
                pending = me._close()
            if depth <= 2:
                pending = me._outer_end(depth)
            depth -= 1

        def data(_text: str) -> None:
            nonlocal pending
            if pending:
                pending = me._close()

        def done() -> None:
            budget.elements, budget.attributes = elements, attributes

        return start, end, data if keep is not None else None, done

    def _on_start(self, name: str, attrs: dict[str, str], depth: int) -> None:
        """What the role reads from an element no deeper than `hook_depth`."""

    # -- the root and its children ------------------------------------------------------------

    def _outer(self, name: str, depth: int) -> None:
        """The root (checked) or one of its children (kept or cut out) starts."""
        if depth == 1:
            if name != self.root:
                self._not_root(name)
        elif self.keep is not None:
            if self.first_child is None:
                self.first_child = self.parser.CurrentByteIndex
            if name in self.keep:
                self.child_start = self.parser.CurrentByteIndex
            else:
                self.cut = True

    def _outer_end(self, depth: int) -> bool:
        """The root or one of its children ends; whether it was a kept child (the next event's
        position then ends it: `_close`)."""
        if depth == 2 and self.child_start is not None:
            return True
        if depth == 1:
            self.root_end = self.parser.CurrentByteIndex
        return False

    def _close(self) -> bool:
        """End the kept child at this event's position (one range with the last kept child's
        when nothing was cut out between them); False, for the closure's flag."""
        assert self.child_start is not None
        end = self.parser.CurrentByteIndex
        if self.ranges and not self.cut:
            self.ranges[-1] = end
        else:
            self.ranges.extend((self.child_start, end))
        self.child_start = None
        self.cut = False
        return False

    # -- refusals ----------------------------------------------------------------------------

    def _doctype(self, *_: Any) -> None:
        raise PartError(
            f"{self.where} declares a DTD or entities, which no spreadsheet needs; save the form "
            "again from a spreadsheet program"
        )

    def _declaration(self, _version: str, encoding: str | None, _standalone: int) -> None:
        if encoding is not None and encoding.lower() not in _DECLARED_ENCODING:
            raise PartError(
                f"{self.where} declares the encoding {encoding!r}, not UTF-8; {_SAVE_AGAIN}"
            )

    def _not_root(self, name: str) -> None:
        raise PartError(
            f"{self.where} is damaged (its XML is <{name.rpartition('}')[2]}>, not "
            f"<{self.root.rpartition('}')[2]}>); save the form again as Excel .xlsx"
        )

    def _over_budget(self, elements: bool) -> PartError:
        if elements:
            what = f"more than {MAX_ELEMENTS:,} XML elements"
        else:
            what = f"more than {MAX_ATTRIBUTES:,} XML attributes"
        return PartError(
            f"the workbook holds {what} (the count reached it in {self.place}); a form of 100 "
            "questions needs far fewer: delete unused rows, columns and formatting, or copy the "
            "sheets' cells into a new workbook (docs/xlsform.md#limits)"
        )

    def _too_deep(self) -> PartError:
        return PartError(
            f"{self.where} nests XML elements more than {MAX_DEPTH} deep, which no spreadsheet "
            f"does; {_SAVE_AGAIN}"
        )

    def _too_many_entries(self) -> PartError:
        return PartError(
            f"{self.where} lists more than {self.whole:,} entries; an XLSForm needs a few dozen: "
            f"{_SAVE_AGAIN}"
        )


class _Types(_Stream):
    """[Content_Types].xml: where openpyxl finds the workbook and its shared strings."""

    root = f"{_CONTENT_TYPES}}}Types"
    whole = MAX_LIST_ELEMENTS

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.overrides: list[tuple[str, str]] = []
        self.defaults: set[str] = set()

    def _on_start(self, name: str, attrs: dict[str, str], depth: int) -> None:
        if depth != 2:
            return
        if name == f"{_CONTENT_TYPES}}}Override":
            part = attrs.get("PartName", "")
            self.overrides.append((part[1:], attrs.get("ContentType", "")))
        elif name == f"{_CONTENT_TYPES}}}Default":
            self.defaults.add(attrs.get("ContentType", ""))

    def workbook(self) -> str | None:
        """The workbook part, found as openpyxl finds it."""
        for kind in _WORKBOOK_TYPES:
            found = self._find(kind)
            if found is not None:
                return found
        return "xl/workbook.xml" if self.defaults & set(_WORKBOOK_TYPES) else None

    def shared_strings(self) -> str | None:
        """The shared strings part, found as openpyxl finds it."""
        return self._find(_SHARED_STRINGS)

    def _find(self, kind: str) -> str | None:
        return next((part for part, found in self.overrides if found == kind), None)


class _Relationships(_Stream):
    """The workbook's relationships: which part each sheet is."""

    root = f"{_PACKAGE_RELS}}}Relationships"
    whole = MAX_LIST_ELEMENTS

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.links: dict[str, tuple[str, str]] = {}
        self.parent = posixpath.dirname(posixpath.dirname(self.path))

    def _on_start(self, name: str, attrs: dict[str, str], depth: int) -> None:
        if depth != 2 or name != f"{_PACKAGE_RELS}}}Relationship":
            return
        if attrs.get("TargetMode") == "External":
            return
        target = attrs.get("Target", "")  # resolved as openpyxl's get_dependents does
        if target.startswith("/"):
            target = target[1:]
        else:
            target = posixpath.normpath(posixpath.join(self.parent, target))
        self.links.setdefault(attrs.get("Id", ""), (attrs.get("Type", ""), target))


class _Workbook(_Stream):
    """The workbook part, cut to its sheet list and date system (no names, links or caches)."""

    root = _main("workbook")
    keep = frozenset({_WORKBOOK_PR, _SHEETS})
    whole = MAX_LIST_ELEMENTS
    hook_depth = 3

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.sheets: list[tuple[str, str]] = []
        self.in_sheets = False
        #: The date system (workbookPr's date1904, as written; openpyxl reads the last one).
        self.date1904: str | None = None

    def _on_start(self, name: str, attrs: dict[str, str], depth: int) -> None:
        if depth == 2:
            self.in_sheets = name == _SHEETS
            if name == _WORKBOOK_PR:
                self.date1904 = attrs.get("date1904")
        elif depth == 3 and self.in_sheets and name == _SHEET:
            rid = attrs.get(f"{_DOCUMENT_RELS}}}id")
            if rid:  # openpyxl skips a sheet without one
                self.sheets.append((attrs.get("name", ""), rid))

    def minimal(self, names: list[str]) -> bytes:
        """A workbook part of the date system and the sheets `names`, the i-th at rId{i}."""
        system = (
            "" if self.date1904 is None else f"<workbookPr date1904={quoteattr(self.date1904)}/>"
        )
        sheets = "".join(
            f'<sheet name={quoteattr(name)} sheetId="{i}" r:id="rId{i}"/>'
            for i, name in enumerate(names, start=1)
        )
        return (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{_MAIN}" '
            f'xmlns:r="{_DOCUMENT_RELS}">{system}<sheets>{sheets}</sheets></workbook>'
        ).encode()


class _Styles(_Stream):
    """The stylesheet, read only for which cell formats show dates; openpyxl gets `minimal()`."""

    root = _main("styleSheet")
    hook_depth = 3

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.is_stylesheet = True
        self.formats: dict[int, str] = {}
        self.cell_formats: list[int] = []
        self.section = ""

    def _not_root(self, name: str) -> None:
        self.is_stylesheet = False  # not a stylesheet: left out, as if absent
        raise _Stop

    def _on_start(self, name: str, attrs: dict[str, str], depth: int) -> None:
        if depth == 2:
            self.section = name
        elif depth == 3 and self.section == _CELL_XFS and name == _XF:
            if len(self.cell_formats) >= MAX_CELL_FORMATS:
                raise PartError(
                    f"{self.where} holds more than {MAX_CELL_FORMATS:,} cell formats, more than "
                    "Excel allows; copy the sheets' cells into a new workbook "
                    "(docs/xlsform.md#limits)"
                )
            self.cell_formats.append(_number(attrs.get("numFmtId")))
        elif depth == 3 and self.section == _NUM_FMTS and name == _NUM_FMT:
            self.formats[_number(attrs.get("numFmtId"))] = attrs.get("formatCode", "")

    def minimal(self) -> bytes:
        """A stylesheet whose cell formats are General, a date or a duration exactly where the
        original's are, so openpyxl reads every value as it would have (and builds nothing
        else); it stops at the last date format, since later ones read as General."""
        from openpyxl.styles.numbers import (
            builtin_format_code,
            is_date_format,
            is_timedelta_format,
        )

        ids: list[int] = []
        for number in self.cell_formats:
            code = self.formats.get(number) or builtin_format_code(number)
            if is_timedelta_format(code):
                ids.append(46)  # [h]:mm:ss
            elif is_date_format(code):
                ids.append(14)  # mm-dd-yy
            else:
                ids.append(0)  # General
        while len(ids) > 1 and ids[-1] == 0:
            ids.pop()
        ids = ids or [0]
        xfs = "".join(
            f'<xf numFmtId="{i}" fontId="0" fillId="0" borderId="0" xfId="0"/>' for i in ids
        )
        return (
            f'<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="{_MAIN}">'
            '<fonts count="1"><font/></fonts><fills count="1"><fill><patternFill/></fill></fills>'
            '<borders count="1"><border/></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
            f'</cellStyleXfs><cellXfs count="{len(ids)}">{xfs}</cellXfs>'
            '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            "</styleSheet>"
        ).encode()


class _Strings(_Stream):
    """The shared strings, cut to their strings; each bounded as a cell is."""

    root = _main("sst")
    keep = frozenset({_SI})

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: Indexes of the strings over MAX_CELL_CHARS.
        self.long: set[int] = set()

    def _handlers(self) -> _Handlers:
        budget, me, long = self.budget, self, self.long
        elements, attributes, depth = budget.elements, budget.attributes, 0
        index, inner, chars = -1, 0, 0  # the string, its elements and characters so far
        pending = False  # as in _Stream._handlers
        counting = phonetic = False  # in a <t> of its text; in a phonetic run (not its text)

        def start(name: str, attrs: dict[str, str]) -> None:
            nonlocal elements, attributes, depth, index, inner, chars, counting, phonetic, pending
            elements += 1
            attributes += len(attrs)
            if elements > MAX_ELEMENTS or attributes > MAX_ATTRIBUTES:
                raise me._over_budget(elements > MAX_ELEMENTS)
            if pending:
                pending = me._close()
            depth += 1
            if depth > 2:
                if depth > MAX_DEPTH:
                    raise me._too_deep()
                inner += 1
                if inner > MAX_CELL_ELEMENTS:
                    raise PartError(
                        f"a text in the workbook (shared string {index + 1}) has more than "
                        f"{MAX_CELL_ELEMENTS} XML elements of rich text; clear its formatting "
                        "(docs/xlsform.md#limits)"
                    )
                if name == _TEXT:
                    counting = not phonetic
                elif name == _PHONETIC:
                    phonetic = True
            else:
                me._outer(name, depth)
                if depth == 2:  # a string (or a child cut out, which openpyxl never sees)
                    index += name == _SI
                    inner = chars = 0
                    phonetic = counting = False

        def end(name: str) -> None:
            nonlocal depth, counting, phonetic, pending
            if pending:
                pending = me._close()
            if depth <= 2:
                pending = me._outer_end(depth)
            elif name == _TEXT:
                counting = False
            elif name == _PHONETIC:
                phonetic = False
            depth -= 1

        def data(text: str) -> None:
            nonlocal chars, pending
            if pending:
                pending = me._close()
            if counting:
                chars += len(text)
                if chars > MAX_CELL_CHARS:
                    long.add(index)

        def done() -> None:
            budget.elements, budget.attributes = elements, attributes

        return start, end, data, done


class _Worksheet(_Stream):
    """A worksheet, cut to its cells (and the dimension openpyxl sizes it by)."""

    root = _main("worksheet")
    keep = frozenset({_SHEET_DATA, _DIMENSION})

    def __init__(
        self,
        path: str,
        where: str,
        budget: _Budget,
        sheet: Sheet,
        long: set[int],
        *,
        empty_run: int,
        rows_kept: int,
    ) -> None:
        super().__init__(path, where, budget)
        self.place = f"the {sheet.name} sheet"
        self.sheet, self.long = sheet, long
        self.empty_run, self.rows_kept = empty_run, rows_kept

    def _handlers(self) -> _Handlers:
        budget, me, sheet, long = self.budget, self, self.sheet, self.long
        empty_run, rows_kept = self.empty_run, self.rows_kept
        value_rows = sheet.value_rows
        elements, attributes, depth = budget.elements, budget.attributes, 0
        in_data = False  # inside <sheetData>
        row = cells = 0  # the row's number and its cells so far
        has_value = False  # the row holds a value
        last_value_row, counted = 1, True  # rows holding a value counted up to a long empty run
        reference = ""  # the cell's own reference (C5), when it has one
        inner = chars = 0  # the cell's elements and characters so far
        counting = phonetic = shared = False  # in its value; in a phonetic run; an index
        index_text: list[str] = []
        pending = False  # as in _Stream._handlers

        def where() -> str:
            return f"{me.where}, row {row}, column {_letters(_column(reference, cells))}"

        def start(name: str, attrs: dict[str, str]) -> None:
            nonlocal elements, attributes, depth, in_data, row, cells, has_value, reference
            nonlocal inner, chars, counting, phonetic, shared, pending
            elements += 1
            attributes += len(attrs)
            if elements > MAX_ELEMENTS or attributes > MAX_ATTRIBUTES:
                raise me._over_budget(elements > MAX_ELEMENTS)
            if pending:
                pending = me._close()
            depth += 1
            if depth > 4:
                if depth > MAX_DEPTH:
                    raise me._too_deep()
                if in_data:  # inside a cell
                    inner += 1
                    if inner > MAX_CELL_ELEMENTS:
                        raise PartError(
                            f"{where()}: the cell has more than {MAX_CELL_ELEMENTS} XML elements "
                            "of rich text; clear its formatting (docs/xlsform.md#limits)"
                        )
                    if name == _TEXT:
                        counting = not phonetic
                    elif name == _VALUE:
                        counting = depth == 5
                    elif name == _PHONETIC:
                        phonetic = True
            elif depth == 4:
                if in_data:  # every child of a row is read as a cell
                    cells += 1
                    if cells > MAX_ROW_CELLS:
                        raise PartError(
                            f"{me.where}, row {row}: more than {MAX_ROW_CELLS:,} cells, empty "
                            "ones included; delete the columns after the form's last one, or "
                            "copy the sheet's cells into a new workbook (docs/xlsform.md#limits)"
                        )
                    reference = attrs.get("r", "")
                    shared = attrs.get("t") == "s"
                    inner = chars = 0
                    phonetic = False
                    if index_text:
                        index_text.clear()
            elif depth == 3:
                if in_data:
                    if name != _ROW:
                        raise PartError(
                            f"{me.where} holds <{name.rpartition('}')[2]}> among its rows, which "
                            f"no spreadsheet writes; {_SAVE_AGAIN}"
                        )
                    number = attrs.get("r", "")
                    row = int(number) if _digits(number, 8) else row + 1
                    cells = 0
                    has_value = False
            else:
                me._outer(name, depth)
                in_data = depth == 2 and name == _SHEET_DATA

        def end(name: str) -> None:
            nonlocal depth, counting, phonetic, has_value, last_value_row, counted, pending
            if pending:
                pending = me._close()
            closing = depth
            depth -= 1
            if closing >= 5:
                if name == _VALUE or name == _TEXT:
                    counting = False
                elif name == _PHONETIC:
                    phonetic = False
            elif not in_data or closing < 3:
                if closing <= 2:
                    pending = me._outer_end(closing)
            elif closing == 4:
                if chars:
                    has_value = True
                    if row == 1:
                        column = _column(reference, cells)
                        sheet.header_width = max(sheet.header_width, column)
                if shared and long and index_text:
                    number = "".join(index_text).strip()
                    if _digits(number, 10) and int(number) in long:
                        raise PartError(f"{where()}: the cell {_TOO_LONG}")
            elif has_value and row >= 2 and counted:
                if row - last_value_row - 1 > empty_run:
                    counted = False  # the reader stops at such a run, as pyxform does
                elif len(value_rows) < rows_kept:
                    value_rows.append(row)
                    last_value_row = row

        def data(text: str) -> None:
            nonlocal chars, pending
            if pending:
                pending = me._close()
            if counting:
                chars += len(text)
                if chars > MAX_CELL_CHARS:
                    raise PartError(f"{where()}: the cell {_TOO_LONG}")
                if shared:
                    index_text.append(text)

        def done() -> None:
            budget.elements, budget.attributes = elements, attributes

        return start, end, data, done


def _number(text: str | None) -> int:
    return int(text) if text and _digits(text, 10) else 0


def _digits(text: str, most: int) -> bool:
    """Whether `text` is 1 to `most` ASCII digits (int() takes it, quickly)."""
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def _column(reference: str, place: int) -> int:
    """A cell's column (1 = A) from its reference (`C5`), else its place in the row."""
    letters = reference.rstrip("0123456789").upper()
    if not letters or len(letters) > 3 or not letters.isalpha() or not letters.isascii():
        return place
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def _letters(column: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(column) if 1 <= column <= 18278 else str(column)
