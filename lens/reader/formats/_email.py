"""E-mail: one message (.eml) or a mailbox (.mbox), through the standard library's ``email`` (``policy.default``:
encoded headers decoded, MIME parts walked).

A message's text: its Subject, From, To, Cc and Date as lines ("Subject: Budget"), then its body — the text/plain
part, or the text/html part as text when there is no plain one; attachments are not read. Units: one per
message. Location: ``{"message": N}`` for every line, N 1-based in the mbox's order (an .eml is message 1). Title:
an .eml's Subject (else its file name); an mbox message's is the file name, then the message's subject.

An mbox is split at each line that starts with "From " (mboxo and mboxrd: the ">From " quoting of body lines is
undone). The standard library's ``mailbox`` is not used: it needs a path and opens the file for writing.
"""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from lens.reader.formats import Limits, Unit
from lens.reader.formats._common import document_title, html_text, one_line, unit_title

_HEADERS = ("Subject", "From", "To", "Cc", "Date")
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


def _part_text(part: EmailMessage) -> str:
    try:
        return part.get_content()
    except (LookupError, UnicodeError, AssertionError):  # an unknown or wrong charset: read it as UTF-8
        return (part.get_payload(decode=True) or b"").decode("utf-8", errors="replace")


def _message_lines(message: EmailMessage) -> list[str]:
    lines = []
    for header in _HEADERS:
        value = message.get(header)
        if value is not None and one_line(value):
            lines.append(f"{header}: {one_line(value)}")
    body = message.get_body(preferencelist=("plain",))
    text = ""
    if body is not None:
        text = _part_text(body)
    else:
        body = message.get_body(preferencelist=("html",))
        if body is not None:
            text, _ = html_text(_part_text(body))
    lines += [line.rstrip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    return lines


def _parse(data: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(data)


def extract_eml(data: bytes, name: str, limits: Limits) -> list[Unit]:
    message = _parse(data)
    lines = _message_lines(message)
    title = document_title(message.get("Subject"), name)
    return [Unit("\n".join(lines), title, {"message": 1})] if lines else []


def mbox_messages(data: bytes) -> list[bytes]:
    """The raw messages of an mbox, each without its "From " separator line, body quoting undone."""
    starts = [m.start() for m in re.finditer(rb"^From ", data, re.MULTILINE)]
    if not starts or starts[0] != 0 and data[: starts[0]].strip():
        starts.insert(0, 0)  # text before the first separator is a message too, not dropped unread
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[start:end]
        if chunk.startswith(b"From "):
            chunk = chunk[chunk.find(b"\n") + 1 :] if b"\n" in chunk else b""
        out.append(_QUOTED_FROM.sub(rb"\1", chunk))
    return out


def extract_mbox(data: bytes, name: str, limits: Limits) -> list[Unit]:
    file_title = document_title(None, name)
    units = []
    for n, raw in enumerate(mbox_messages(data), 1):
        message = _parse(raw)
        lines = _message_lines(message)
        if lines:
            units.append(Unit("\n".join(lines), unit_title(file_title, message.get("Subject")), {"message": n}))
    return units
