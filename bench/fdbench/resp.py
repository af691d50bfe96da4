"""resp.py — the one RESP client codec of the project's Python code: the
benchmark (fdbench.procs) and the integration tests (tests/integration/
fdtest.py re-exports it) encode commands and parse replies with it."""


def _b(x):
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, str):
        return x.encode("utf-8", "surrogateescape")
    if isinstance(x, bool):
        return b"1" if x else b"0"
    if isinstance(x, (int, float)):
        return repr(x).encode()
    raise TypeError("cannot encode %r" % (x,))


def encode(*args):
    """Encode one command as a RESP multibulk."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = _b(a)
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


class Err(str):
    """An error reply (the text without the leading '-')."""

    def __repr__(self):
        return "Err(%s)" % str.__repr__(self)


class Push(list):
    pass


class Verbatim(bytes):
    fmt = b"txt"


def parse(raw):
    """Parse one complete raw reply into Python values:
    +simple -> str, -err -> Err, :n -> int, $ -> bytes, null -> None,
    * -> list, % -> dict, ~ -> list, > -> Push, , -> float, # -> bool,
    ( -> int, = -> Verbatim (bytes without the format), | -> skipped."""
    v, end = _parse_at(raw, 0)
    if end != len(raw):
        raise ValueError("trailing bytes after reply: %r" % raw[end:end + 50])
    return v


def _parse_at(raw, p):
    e = raw.index(b"\r\n", p)
    t = raw[p:p + 1]
    head = raw[p + 1:e]
    q = e + 2
    if t == b"+":
        return head.decode("utf-8", "surrogateescape"), q
    if t == b"-":
        return Err(head.decode("utf-8", "surrogateescape")), q
    if t in (b":", b"("):
        return int(head), q
    if t == b"_":
        return None, q
    if t == b",":
        h = head.decode()
        return float(h), q
    if t == b"#":
        return head == b"t", q
    if t in (b"$", b"!", b"="):
        n = int(head)
        if n < 0:
            return None, q
        if q + n + 2 > len(raw):
            raise IndexError("incomplete bulk")
        body = raw[q:q + n]
        if t == b"=":
            v = Verbatim(body[4:])
            v.fmt = body[:3]
            return v, q + n + 2
        if t == b"!":
            return Err(body.decode("utf-8", "surrogateescape")), q + n + 2
        return body, q + n + 2
    if t in (b"*", b"~", b">"):
        n = int(head)
        if n < 0:
            return None, q
        out = Push() if t == b">" else []
        for _ in range(n):
            v, q = _parse_at(raw, q)
            out.append(v)
        return out, q
    if t in (b"%", b"|"):
        n = int(head)
        d = {}
        for _ in range(n):
            k, q = _parse_at(raw, q)
            v, q = _parse_at(raw, q)
            if isinstance(k, list):
                k = tuple(k)
            d[k] = v
        if t == b"|":
            return _parse_at(raw, q)
        return d, q
    raise ValueError("bad RESP type byte %r" % t)




def complete(buf):
    """The length of the first whole reply in buf, or 0 while incomplete."""
    try:
        return _parse_at(buf, 0)[1]
    except (IndexError, ValueError):
        return 0
