"""PDFs built in the test: a small one saying a text, a PDF bomb whose pages all point at
one FlateDecode content stream of text operators, an encrypted one."""

from __future__ import annotations

import io
import zlib

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, StreamObject

BOMB_LINE = b"BT /F1 12 Tf 20 100 Td (Ha ha ha ha) Tj ET\n"


def _font_resources(writer: PdfWriter) -> DictionaryObject:
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    return DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )


def pdf_bomb(pages: int, stream_bytes: int = 10 * 1024 * 1024) -> bytes:
    """`pages` pages sharing one content stream of `stream_bytes` of text operators,
    stored compressed (a few dozen KB on disk)."""
    writer = PdfWriter()
    content = StreamObject()
    data = BOMB_LINE * (stream_bytes // len(BOMB_LINE))
    content._data = zlib.compress(data, 9)
    content[NameObject("/Filter")] = NameObject("/FlateDecode")
    reference = writer._add_object(content)
    resources = _font_resources(writer)
    for _ in range(pages):
        page = writer.add_blank_page(width=420, height=200)
        page[NameObject("/Resources")] = resources
        page[NameObject("/Contents")] = reference
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def small_pdf(text: str, writer: PdfWriter | None = None) -> bytes:
    """A one-page PDF saying `text` (through `writer`, to encrypt it say)."""
    writer = writer or PdfWriter()
    page = writer.add_blank_page(width=420, height=200)
    page[NameObject("/Resources")] = _font_resources(writer)
    content = DecodedStreamObject()
    content.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode("latin-1"))
    page[NameObject("/Contents")] = writer._add_object(content)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def encrypted_pdf(text: str, password: str = "secret") -> bytes:
    """A one-page PDF saying `text`, encrypted with a user password."""
    writer = PdfWriter()
    writer.encrypt(password, algorithm="AES-128")
    return small_pdf(text, writer)
