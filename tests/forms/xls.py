"""Legacy .xls workbooks written for the tests: an OLE2 compound file (version 3, one stream)
holding a BIFF8 workbook of text and number cells, as little of each format as xlrd reads.
Enough to build hostile .xls forms (too many cells, rows, columns, a long cell) without a
writer library."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

Cell = str | int | float | None
_SECTOR = 512
_FREE, _END, _FAT, _NONE = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF


def _record(code: int, body: bytes) -> bytes:
    return struct.pack("<HH", code, len(body)) + body


def _bof(kind: int) -> bytes:
    return _record(0x0809, struct.pack("<HHHHII", 0x0600, kind, 0x0DBB, 1996, 0, 6))


def cells(rows: Iterable[Sequence[Cell]]) -> bytes:
    """Cell records of rows (text as LABEL, numbers as NUMBER), from row 0."""
    out = bytearray()
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if value is None:
                continue
            if isinstance(value, str):
                text = value.encode("utf-16-le")
                body = struct.pack("<HHHHB", r, c, 0, len(value), 1) + text
                out += _record(0x0204, body)  # LABEL, the string stored as UTF-16
            else:
                out += _record(0x0203, struct.pack("<HHHd", r, c, 0, float(value)))  # NUMBER
    return bytes(out)


def mulrk_rows(rows: int, columns: int, start: int = 1) -> bytes:
    """Rows of number cells packed six bytes each (MULRK), the densest cells BIFF8 has, from
    row `start` (under a header row)."""
    out = bytearray(cells([[f"column {c}" for c in range(columns)]]))
    for r in range(start, start + rows):
        packed = b"".join(struct.pack("<HI", 0, (7 << 2) | 2) for _ in range(columns))
        out += _record(0x00BD, struct.pack("<HH", r, 0) + packed + struct.pack("<H", columns - 1))
    return bytes(out)


def workbook(sheets: dict[str, Iterable[Sequence[Cell]] | bytes]) -> bytes:
    """An .xls of the given sheets (rows of cells, or already written cell records)."""
    bodies = [body if isinstance(body, bytes) else cells(body) for body in sheets.values()]
    names = list(sheets)
    head = _bof(0x0005)
    bound = [
        struct.pack("<IBBBB", 0, 0, 0, len(name), 0) + name.encode("latin-1") for name in names
    ]
    globals_size = len(head) + sum(4 + len(b) for b in bound) + 4
    stream = bytearray(head)
    at = globals_size
    for name, body in zip(bound, bodies, strict=True):
        stream += _record(0x0085, struct.pack("<I", at) + name[4:])
        at += len(_bof(0x0010)) + len(body) + 4
    stream += _record(0x000A, b"")
    for body in bodies:
        stream += _bof(0x0010) + body + _record(0x000A, b"")
    stream += b"\0" * (-len(stream) % _SECTOR or 0)
    if len(stream) < 4096:  # below that, OLE2 keeps a stream in its mini stream
        stream += b"\0" * (4096 - len(stream))
    return _compound(bytes(stream))


def _compound(stream: bytes) -> bytes:
    """An OLE2 compound file of one stream, "Workbook"."""
    sectors = len(stream) // _SECTOR
    entries_per_fat = _SECTOR // 4
    fat_sectors = 1
    while (sectors + 1 + fat_sectors) > fat_sectors * entries_per_fat:
        fat_sectors += 1
    assert fat_sectors <= 109, "too large for a header-only DIFAT"
    directory = sectors
    fat = [i + 1 for i in range(sectors - 1)] + [_END, _END]
    fat += [_FAT] * fat_sectors
    fat += [_FREE] * (fat_sectors * entries_per_fat - len(fat))
    header = bytearray(_SECTOR)
    header[0:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    struct.pack_into("<HHHHH", header, 24, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<IIIIIIII", header, 44, fat_sectors, directory, 0, 4096, _END, 0, _END, 0)
    difat = [directory + 1 + i for i in range(fat_sectors)] + [_FREE] * (109 - fat_sectors)
    struct.pack_into("<109I", header, 76, *difat)

    def entry(name: str, kind: int, child: int, start: int, length: int) -> bytes:
        raw = (name + "\0").encode("utf-16-le") if name else b""
        body = bytearray(128)
        body[0 : len(raw)] = raw
        struct.pack_into("<HBB", body, 64, len(raw), kind, 1)
        struct.pack_into("<III", body, 68, _NONE, _NONE, child)
        struct.pack_into("<II", body, 116, start, length)
        return bytes(body)

    entries = entry("Root Entry", 5, 1, _END, 0) + entry("Workbook", 2, _NONE, 0, len(stream))
    entries += entry("", 0, _NONE, 0, 0) * 2
    fat_bytes = struct.pack(f"<{len(fat)}I", *fat)
    return bytes(header) + stream + entries + fat_bytes
