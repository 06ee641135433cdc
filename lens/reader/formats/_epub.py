"""EPUB books, through the standard library: ``zipfile`` (checked against zip bombs first), ``xml.etree`` for the
container and the package document (OPF), and ``html.parser`` for the XHTML (lenient about HTML entities).

Units: one per document of the spine (the book's reading order) that has text. Location: ``{"section": N}`` for
every line, N the document's 1-based position in the spine — a chapter in most books, but a spine document can
be a cover, a title page or part of a chapter, hence "section". Title: the book's dc:title when it reads as one,
else the file name; then the section's first h1–h3 heading. A spine document that DRM encryption covers
(META-INF/encryption.xml, font obfuscation aside) → ``encrypted``.
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
from urllib.parse import unquote

from lens.reader.formats import Limits, Unit, Unreadable, open_zip, read_member
from lens.reader.formats._common import document_title, html_text, unit_title

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
_FONT_OBFUSCATION = ("http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC")


def _encrypted_members(zf, limit: int) -> set[str]:
    try:
        root = ET.fromstring(read_member(zf, "META-INF/encryption.xml", limit))
    except KeyError:
        return set()
    out = set()
    for data in root.iter(_ENC + "EncryptedData"):
        method = data.find(_ENC + "EncryptionMethod")
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        ref = data.find(f"{_ENC}CipherData/{_ENC}CipherReference")
        if ref is not None and ref.get("URI"):
            out.add(posixpath.normpath(unquote(ref.get("URI"))))
    return out


def extract(data: bytes, name: str, limits: Limits) -> list[Unit]:
    with open_zip(data, limits) as zf:
        limit = limits.max_file_bytes
        container = ET.fromstring(read_member(zf, "META-INF/container.xml", limit))
        rootfile = container.find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
        if rootfile is None or not rootfile.get("full-path"):
            raise Unreadable("corrupt", "META-INF/container.xml names no package document (rootfile)")
        opf_path = rootfile.get("full-path")
        opf = ET.fromstring(read_member(zf, opf_path, limit))
        base = posixpath.dirname(opf_path)
        title = document_title(opf.findtext(f"{_OPF}metadata/{_DC}title"), name)
        manifest = {
            item.get("id"): posixpath.normpath(posixpath.join(base, unquote(item.get("href", "").split("#")[0])))
            for item in opf.iter(_OPF + "item")
        }
        encrypted = _encrypted_members(zf, limit)
        units = []
        for n, ref in enumerate(opf.iter(_OPF + "itemref"), 1):
            path = manifest.get(ref.get("idref"))
            if path is None:
                continue
            if path in encrypted:
                raise Unreadable("encrypted", f"{path} is encrypted (DRM)")
            try:
                raw = read_member(zf, path, limit)
            except KeyError:
                continue  # a spine entry whose file is missing: the rest of the book is still read
            text, heading = html_text(raw.decode("utf-8", errors="replace"))
            if text:
                units.append(Unit(text, unit_title(title, heading), {"section": n}))
        return units
