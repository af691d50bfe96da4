#!/usr/bin/python3
"""A MongoDB wire-protocol test server: Debian's python3-mongomock (an
in-memory emulation of MongoDB's query and update language) answered over the
wire by Debian's python3-mockupdb. Only for frontdoor's tests: there is no
MongoDB server package in Debian 12.

    /usr/bin/python3 tests/mongo/server.py [PORT]     (0 or none: pick one)

Listens on 127.0.0.1 only and prints "port N" on its first line of stdout
once it accepts connections. Run it with /usr/bin/python3: another python3
on PATH may not see Debian's modules.

It answers what libmongoc 1.23 sends for frontdoor's MongoDB backend:
hello/isMaster (OP_QUERY and OP_MSG, maxWireVersion 13, no sessions),
buildInfo (which says it is an emulator), ping, insert, find, update (operators,
replacement, upsert, multi), delete, findAndModify, count, aggregate,
createIndexes, listIndexes, drop, dropDatabase, listCollections,
killCursors/endSessions; and frontdoorTestInfo (the write concern of the last
write, for the tests). Every result is returned in the first batch
(cursor id 0). Binary values (BSON subtype 0) keep every byte; Int64 stay
64-bit.

Speed: mongomock scans every document for each query. Filters on `_id`
(equality or $in) are looked up directly here instead, so the backend's hot
paths, which all go by `_id`, do not slow down as the collection grows. TTL
indexes are recorded but, as in MongoDB, expired documents are removed by a
periodic sweep (--ttl-interval seconds, default 60), not on every access.

It is an EMULATOR: single-threaded Python under one lock, in memory. Its
figures say nothing about MongoDB's speed and must never be shown as such.
"""

import argparse
import bisect
import datetime
import faulthandler
import signal
import os
import sys
import threading
import time
from collections import OrderedDict

import bson
import mockupdb
import mongomock
from mongomock import filtering
from mongomock.collection import Collection
from mongomock.store import CollectionStore

VERSION = "5.0.0-mongomock-%s" % mongomock.__version__
MAX_BSON = 16 * 1024 * 1024


# ------------------------------------------------------------ the _id index

class _SortedKeys:
    """The string _ids of a collection in order (a list of sorted blocks, so
    an insert or a removal costs O(sqrt n) instead of a whole-list shift):
    MongoDB's _id index for range queries on string _ids. Other _id types
    are not in it (a range on strings only matches strings in MongoDB too)."""
    BLOCK = 1024

    def __init__(self):
        self.blocks = []      # sorted lists
        self.maxes = []       # last key of each block

    def add(self, k):
        if not self.blocks:
            self.blocks.append([k])
            self.maxes.append(k)
            return
        i = bisect.bisect_left(self.maxes, k)
        if i == len(self.blocks):
            i -= 1
        b = self.blocks[i]
        j = bisect.bisect_left(b, k)
        if j < len(b) and b[j] == k:
            return
        b.insert(j, k)
        self.maxes[i] = b[-1]
        if len(b) > 2 * self.BLOCK:
            self.blocks[i:i + 1] = [b[:self.BLOCK], b[self.BLOCK:]]
            self.maxes[i:i + 1] = [b[self.BLOCK - 1], b[-1]]

    def remove(self, k):
        i = bisect.bisect_left(self.maxes, k)
        if i == len(self.blocks):
            return
        b = self.blocks[i]
        j = bisect.bisect_left(b, k)
        if j < len(b) and b[j] == k:
            del b[j]
            if not b:
                del self.blocks[i]
                del self.maxes[i]
            else:
                self.maxes[i] = b[-1]

    def clear(self):
        self.blocks = []
        self.maxes = []

    def __len__(self):
        return sum(len(b) for b in self.blocks)

    def irange(self, lo, lo_incl, hi, hi_incl, reverse=False):
        """The keys between lo and hi (None: unbounded), in order."""
        if not reverse:
            i = 0 if lo is None else bisect.bisect_left(self.maxes, lo)
            j = None
            while i < len(self.blocks):
                b = self.blocks[i]
                j = 0 if lo is None or j is not None and j == -1 else (
                    bisect.bisect_left(b, lo) if lo_incl else bisect.bisect_right(b, lo))
                lo = None
                for k in b[j:]:
                    if hi is not None and (k > hi or (k == hi and not hi_incl)):
                        return
                    yield k
                i += 1
                j = -1
        else:
            i = len(self.blocks) - 1 if hi is None else min(bisect.bisect_left(self.maxes, hi), len(self.blocks) - 1)
            while i >= 0:
                b = self.blocks[i]
                j = len(b) if hi is None else (bisect.bisect_right(b, hi) if hi_incl else bisect.bisect_left(b, hi))
                hi = None
                for k in reversed(b[:j]):
                    if lo is not None and (k < lo or (k == lo and not lo_incl)):
                        return
                    yield k
                i -= 1


class _IndexedDocs(OrderedDict):
    """A collection's documents (mongomock's store) that keep _SortedKeys of
    their string _ids up to date through every way the store changes them."""

    def __init__(self, *a, **kw):
        self.sorted_ids = _SortedKeys()
        super().__init__(*a, **kw)

    def __setitem__(self, k, v):
        if isinstance(k, str) and k not in self:
            self.sorted_ids.add(k)
        super().__setitem__(k, v)

    def __delitem__(self, k):
        super().__delitem__(k)
        if isinstance(k, str):
            self.sorted_ids.remove(k)

    _missing = object()

    def pop(self, k, default=_missing):
        if k in self:
            v = super().pop(k)
            if isinstance(k, str):
                self.sorted_ids.remove(k)
            return v
        if default is _IndexedDocs._missing:
            raise KeyError(k)
        return default

    def popitem(self, last=True):
        k, v = super().popitem(last)
        if isinstance(k, str):
            self.sorted_ids.remove(k)
        return k, v

    def clear(self):
        super().clear()
        self.sorted_ids.clear()

    def setdefault(self, k, default=None):
        if k not in self:
            self[k] = default
        return self[k]

    def update(self, *a, **kw):
        for k, v in OrderedDict(*a, **kw).items():
            self[k] = v


_orig_store_init = CollectionStore.__init__
_orig_store_drop = CollectionStore.drop


def _store_init(self, *a, **kw):
    _orig_store_init(self, *a, **kw)
    self._documents = _IndexedDocs()


def _store_drop(self):
    _orig_store_drop(self)
    self._documents = _IndexedDocs()


CollectionStore.__init__ = _store_init
CollectionStore.drop = _store_drop

_BOUNDS = {"$gt": ("lo", False), "$gte": ("lo", True), "$lt": ("hi", False), "$lte": ("hi", True)}


def _id_range(q):
    """(lo, lo_incl, hi, hi_incl) of a filter that is only a range of string
    _ids ({_id: {$gte: "a", $lt: "b"}}), else None."""
    if not isinstance(q, dict) or list(q.keys()) != ["_id"] or not isinstance(q["_id"], dict):
        return None
    r = {"lo": None, "lo_incl": True, "hi": None, "hi_incl": True}
    for op, v in q["_id"].items():
        if op not in _BOUNDS or not isinstance(v, str):
            return None
        side, incl = _BOUNDS[op]
        r[side] = v
        r[side + "_incl"] = incl
    if r["lo"] is None and r["hi"] is None:
        return None
    return r["lo"], r["lo_incl"], r["hi"], r["hi_incl"]


def _range_ids(c, q, reverse=False):
    """The _ids a string _id range matches, in order, from the index; None
    when q is not such a range."""
    r = _id_range(q)
    docs = c._store._documents
    if r is None or not isinstance(docs, _IndexedDocs):
        return None
    return docs.sorted_ids.irange(r[0], r[1], r[2], r[3], reverse)


# ------------------------------------------------------------ fast _id path

def _slice(arr, sl):
    """MongoDB's $slice projection: n (first n, or last -n) or [skip, limit]
    (a negative skip counts from the end)."""
    if isinstance(sl, list):
        skip, lim = int(sl[0]), int(sl[1])
        start = max(len(arr) + skip, 0) if skip < 0 else min(skip, len(arr))
        return arr[start:start + lim]
    n = int(sl)
    return arr[:n] if n >= 0 else arr[len(arr) + n:] if -n <= len(arr) else arr[:]


_orig_iter = Collection._iter_documents


def _fast_iter(self, flt):
    """Look documents up by _id when the filter pins it (equality or $in)."""
    if isinstance(flt, dict) and "_id" in flt:
        v = flt["_id"]
        ids = None
        if not isinstance(v, dict):
            ids = [v]
        elif list(v.keys()) == ["$in"] and isinstance(v["$in"], list):
            ids = v["$in"]
        if ids is not None:
            docs = self._store._documents
            rest = {k: x for k, x in flt.items() if k != "_id"}
            out = []
            seen = set()
            try:
                for i in ids:
                    if i in seen:
                        continue
                    seen.add(i)
                    d = docs.get(i)
                    if d is not None and (not rest or filtering.filter_applies(rest, d)):
                        out.append(d)
            except TypeError:        # an unhashable _id: the slow way
                return _orig_iter(self, flt)
            return iter(out)
    if isinstance(flt, dict) and len(flt) == 1:
        # {field: {$lte: date}} and the like (expired keys): a plain loop,
        # far cheaper than mongomock's general matcher on every document
        (field, cond), = flt.items()
        if (not field.startswith("$") and "." not in field and isinstance(cond, dict)
                and len(cond) == 1 and next(iter(cond)) in _RANGE
                and isinstance(next(iter(cond.values())), datetime.datetime)):
            op = _RANGE[next(iter(cond))]
            lim = next(iter(cond.values())).replace(tzinfo=None)
            return iter([d for d in list(self._store._documents.values())
                         if isinstance(d.get(field), datetime.datetime)
                         and op(d[field].replace(tzinfo=None), lim)])
    return _orig_iter(self, flt)


def _id_list(q):
    """The _id values of a filter that is only {_id: v} or {_id: {$in: [...]}}
    (hashable values only), else None."""
    if not isinstance(q, dict) or list(q.keys()) != ["_id"]:
        return None
    v = q["_id"]
    ids = [v] if not isinstance(v, dict) else (
        v["$in"] if list(v.keys()) == ["$in"] and isinstance(v["$in"], list) else None)
    if ids is None:
        return None
    try:
        return list(dict.fromkeys(ids))
    except TypeError:
        return None


_RANGE = {"$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
          "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b}
Collection._iter_documents = _fast_iter


# mockupdb formats repr(request) and repr(reply) for its log even when not
# verbose: with thousands of documents that costs more than the work itself.
def _cheap_repr(self):
    return "<%s>" % type(self).__name__


def _quiet_reprs():
    for cls in (mockupdb.Request, mockupdb.OpMsg, mockupdb.OpQuery, mockupdb.Command,
                mockupdb.OpReply, mockupdb.OpMsgReply):
        cls.__repr__ = _cheap_repr


# ------------------------------------------------------------ the server

class Emulator:
    def __init__(self, ttl_interval, delay_ms=0):
        self.client = mongomock.MongoClient()
        self.delay = delay_ms / 1000.0   # every reply waits this long (tests of in-flight windows)
        self.ttl = {}          # (db, coll) -> [(field, seconds)]
        self.lock = threading.Lock()
        self.ttl_interval = ttl_interval
        self.started = time.time()
        self.conn_id = 0
        self.last_write_concern = None

    def coll(self, req, name):
        return self.client[req.doc.get("$db", "test")][name]

    # -- replies
    @staticmethod
    def ok(req, **kw):
        d = OrderedDict(kw)
        d["ok"] = 1
        return req.replies(d)

    @staticmethod
    def err(req, code, msg):
        return req.replies(OrderedDict([("ok", 0), ("errmsg", msg), ("code", code)]))

    def hello(self, req):
        self.conn_id += 1
        return self.ok(req, helloOk=True, ismaster=True, isWritablePrimary=True,
                       maxBsonObjectSize=MAX_BSON, maxMessageSizeBytes=48000000,
                       maxWriteBatchSize=100000,
                       localTime=datetime.datetime.utcnow(),
                       minWireVersion=0, maxWireVersion=13,
                       connectionId=self.conn_id, readOnly=False)

    def handle(self, req):
        name = req.command_name
        if name is None:
            return False
        if self.delay:
            time.sleep(self.delay)
        n = name.lower()
        if n in ("insert", "update", "delete", "findandmodify"):
            wc = req.doc.get("writeConcern")
            self.last_write_concern = dict(wc) if wc is not None else None
        try:
            with self.lock:
                return self.dispatch(req, n, name)
        except mongomock.DuplicateKeyError as e:
            return self.err(req, 11000, str(e))
        except mongomock.OperationFailure as e:
            return self.err(req, e.code or 2, str(e))
        except (mongomock.WriteError, ValueError, TypeError, KeyError, NotImplementedError) as e:
            return self.err(req, 2, "%s: %s" % (type(e).__name__, e))

    def dispatch(self, req, n, name):
        d = req.doc
        if n in ("hello", "ismaster"):
            return self.hello(req)
        if n == "frontdoortestinfo":
            # for the tests: the write concern of the last write received
            return self.ok(req, lastWriteConcern=self.last_write_concern)
        if n == "buildinfo":
            return self.ok(req, version=VERSION, versionArray=[5, 0, 0, 0],
                           gitVersion="mongomock", emulator=True,
                           emulatorName="mongomock %s over mockupdb %s (frontdoor tests/mongo/server.py)"
                           % (mongomock.__version__, getattr(mockupdb, "__version__", "?")),
                           maxBsonObjectSize=MAX_BSON)
        if n in ("ping", "endsessions", "killcursors", "getlasterror", "serverstatus"):
            if n == "serverstatus":
                return self.ok(req, emulator=True, version=VERSION,
                               uptime=time.time() - self.started)
            return self.ok(req)
        if n == "insert":
            return self.insert(req, self.coll(req, d[name]), d.get("documents", []),
                               d.get("ordered", True))
        if n == "find":
            return self.find(req, d[name], d)
        if n == "update":
            return self.update(req, self.coll(req, d[name]), d.get("updates", []),
                               d.get("ordered", True))
        if n == "delete":
            c = self.coll(req, d[name])
            total = 0
            for op in d.get("deletes", []):
                if not op.get("q") and op.get("limit", 0) != 1:
                    total += len(c._store._documents)      # everything (FLUSHDB)
                    c._store._documents.clear()
                    continue
                rng = _range_ids(c, op.get("q"))
                if rng is not None:
                    docs = c._store._documents
                    for i in list(rng)[:1] if op.get("limit", 0) == 1 else list(rng):
                        docs.pop(i, None)
                        total += 1
                    continue
                ids = _id_list(op.get("q"))
                if ids is not None:
                    # by _id: straight out of the store (no deep copies)
                    docs = c._store._documents
                    for i in (ids[:1] if op.get("limit", 0) == 1 else ids):
                        if docs.pop(i, None) is not None:
                            total += 1
                    continue
                if op.get("limit", 0) == 1:
                    total += c.delete_one(op.get("q", {})).deleted_count
                else:
                    total += c.delete_many(op.get("q", {})).deleted_count
            return self.ok(req, n=total)
        if n == "findandmodify":
            return self.find_and_modify(req, self.coll(req, d[name]), d)
        if n == "count":
            c = self.coll(req, d[name])
            q = d.get("query") or {}
            rng = _range_ids(c, q)
            if rng is not None:
                return self.ok(req, n=sum(1 for _ in rng))
            return self.ok(req, n=c.count_documents(q) if q else c.estimated_document_count())
        if n == "aggregate":
            c = self.coll(req, d[name])
            docs = list(c.aggregate(list(d.get("pipeline", []))))
            return self.cursor(req, d[name], docs)
        if n == "createindexes":
            c = self.coll(req, d[name])
            for ix in d.get("indexes", []):
                kw = {"name": ix.get("name")}
                if ix.get("unique"):
                    kw["unique"] = True
                if ix.get("expireAfterSeconds") is not None and len(ix["key"]) == 1:
                    field = next(iter(ix["key"]))
                    self.ttl.setdefault((req.doc.get("$db"), d[name]), []).append(
                        (field, int(ix["expireAfterSeconds"])))
                c.create_index(list(ix["key"].items()), **kw)
            return self.ok(req, numIndexesBefore=1, numIndexesAfter=1 + len(d.get("indexes", [])))
        if n == "listindexes":
            c = self.coll(req, d[name])
            ixs = [OrderedDict([("v", 2), ("key", dict(v["key"])), ("name", k)])
                   for k, v in c.index_information().items()]
            return self.cursor(req, d[name], ixs)
        if n == "drop":
            self.coll(req, d[name]).drop()
            self.ttl.pop((req.doc.get("$db"), d[name]), None)
            return self.ok(req, ns="%s.%s" % (req.doc.get("$db"), d[name]))
        if n == "dropdatabase":
            self.client.drop_database(req.doc.get("$db"))
            return self.ok(req)
        if n == "listcollections":
            db = self.client[req.doc.get("$db", "test")]
            return self.cursor(req, "$cmd.listCollections",
                               [{"name": x, "type": "collection"} for x in db.list_collection_names()])
        return self.err(req, 59, "no such command: '%s' (frontdoor's MongoDB emulator)" % name)

    def cursor(self, req, collname, docs):
        ns = "%s.%s" % (req.doc.get("$db"), collname)
        return self.ok(req, cursor=OrderedDict([("firstBatch", docs), ("id", bson.int64.Int64(0)), ("ns", ns)]))

    def insert(self, req, c, docs, ordered):
        n = 0
        errors = []
        for i, doc in enumerate(docs):
            try:
                c.insert_one(doc)
                n += 1
            except mongomock.DuplicateKeyError as e:
                errors.append({"index": i, "code": 11000, "errmsg": "E11000 duplicate key error: %s" % e})
                if ordered:
                    break
        if errors:
            return self.ok(req, n=n, writeErrors=errors)
        return self.ok(req, n=n)

    def find(self, req, collname, d):
        c = self.coll(req, collname)
        fast = self.fast_find(c, d)
        if fast is not None:
            return self.cursor(req, collname, fast)
        cur = c.find(d.get("filter") or {}, d.get("projection") or None)
        if d.get("sort"):
            cur = cur.sort(list(d["sort"].items()))
        if d.get("skip"):
            cur = cur.skip(int(d["skip"]))
        lim = int(d.get("limit", 0) or 0)
        if lim:
            cur = cur.limit(abs(lim))
        return self.cursor(req, collname, list(cur))

    @staticmethod
    def fast_find(c, d):
        """find by _id (equality or $in) or of everything, with a top-level
        projection and no sort/skip: straight from the store, without
        mongomock's deep copies. None when the query needs mongomock."""
        flt = d.get("filter") or {}
        srt = d.get("sort") or None
        rng = None
        if _id_range(flt) is not None and (not srt or list(srt.keys()) == ["_id"]):
            # a range of string _ids, in _id order: from the index
            rng = _range_ids(c, flt, reverse=bool(srt) and srt["_id"] < 0)
        if rng is None and (srt or d.get("skip")):
            return None
        proj = d.get("projection") or None
        incl = excl = None
        slices = {}
        if proj:
            # {field: {$slice: n | [skip, limit]}} is done here (as MongoDB:
            # a field that is not an array comes back unchanged; mongomock
            # would fail on it)
            for k, v in list(proj.items()):
                if isinstance(v, dict) and list(v.keys()) == ["$slice"] and "." not in k:
                    slices[k] = v["$slice"]
            proj = OrderedDict((k, v) for k, v in proj.items() if k not in slices)
            if slices and not any(v for k, v in proj.items() if k != "_id"):
                proj = None          # $slice alone: every other field too
            elif slices:
                proj = OrderedDict(list(proj.items()) + [(k, 1) for k in slices])
        if proj:
            if any(k.startswith("$") or "." in k or isinstance(v, dict) for k, v in proj.items()):
                return None
            incl = [k for k, v in proj.items() if v and k != "_id"]
            excl = [k for k, v in proj.items() if not v]
            if incl and [k for k in excl if k != "_id"]:
                return None
        docs = c._store._documents
        lim = abs(int(d.get("limit", 0) or 0))
        if rng is not None:
            skip = int(d.get("skip", 0) or 0)
            cand = []
            for k in rng:
                if skip:
                    skip -= 1
                    continue
                cand.append(docs[k])
                if lim and len(cand) >= lim:
                    break
        elif not flt:
            cand = list(docs.values())
        else:
            ids = _id_list(flt)
            if ids is None:
                return None
            cand = [docs[i] for i in ids if i in docs]
        if lim:
            cand = cand[:lim]
        out = []
        for doc in cand:
            if incl:
                o = OrderedDict((k, doc[k]) for k in ["_id"] + incl if k in doc and k not in excl)
            elif excl:
                o = OrderedDict((k, v) for k, v in doc.items() if k not in excl)
            else:
                o = OrderedDict(doc)
            for k, sl in slices.items():
                if isinstance(o.get(k), list):
                    o[k] = _slice(o[k], sl)
            out.append(o)
        return out

    def update(self, req, c, ops, ordered):
        n = nmod = 0
        upserted = []
        errors = []
        for i, op in enumerate(ops):
            u = op.get("u", {})
            if isinstance(u, list):
                errors.append({"index": i, "code": 2, "errmsg": "update pipelines are not emulated"})
                if ordered:
                    break
                continue
            q = op.get("q", {})
            fr = self.fast_replace(c, q, u, bool(op.get("upsert")))
            if fr:
                n += 1
                if fr == "inserted":
                    upserted.append({"index": i, "_id": q["_id"]})
                else:
                    nmod += 1
                continue
            try:
                r = c._update(q, u, upsert=bool(op.get("upsert")),
                              multi=bool(op.get("multi")))
            except mongomock.DuplicateKeyError as e:
                errors.append({"index": i, "code": 11000, "errmsg": "E11000 duplicate key error: %s" % e})
                if ordered:
                    break
                continue
            except (mongomock.OperationFailure, mongomock.WriteError, ValueError, TypeError) as e:
                errors.append({"index": i, "code": getattr(e, "code", None) or 2, "errmsg": str(e)})
                if ordered:
                    break
                continue
            if r.get("upserted") is not None:
                upserted.append({"index": i, "_id": r["upserted"]})
                n += 1
            else:
                n += r.get("n", 0)
                nmod += r.get("nModified", 0)
        kw = OrderedDict([("n", n), ("nModified", nmod)])
        if upserted:
            kw["upserted"] = upserted
        if errors:
            kw["writeErrors"] = errors
        return self.ok(req, **kw)

    @staticmethod
    def fast_replace(c, q, u, upsert):
        """A replacement of the document with a given _id (an upsert or
        not, the result is the same when it exists): set it directly when no
        secondary unique index could object. The common write of the tests."""
        if len(q) != 1 or "_id" not in q or isinstance(q["_id"], dict):
            return False
        if any(k.startswith("$") for k in u) or ("_id" in u and u["_id"] != q["_id"]):
            return False
        st = c._store
        if any(ix.get("unique") for ix in st.indexes.values()):
            return False
        try:
            exists = q["_id"] in st._documents
        except TypeError:
            return False
        if not exists and not (upsert and st.is_created):
            return False           # the full path (no match, or collection creation)
        doc = OrderedDict([("_id", q["_id"])])
        for k, v in u.items():
            if k != "_id":
                doc[k] = v
        st._documents[q["_id"]] = doc
        return "replaced" if exists else "inserted"

    @staticmethod
    def _project(doc, fields):
        if doc is None or not fields:
            return doc
        incl = [k for k, v in fields.items() if v and k != "_id"]
        if incl and all(not isinstance(v, dict) for v in fields.values()):
            return OrderedDict((k, doc[k]) for k in ["_id"] + incl if k in doc and not (k == "_id" and fields.get("_id") == 0))
        return None

    def fast_find_and_modify(self, req, c, d):
        """findAndModify of one _id that replaces or removes the document,
        with an inclusion projection (the backend's writes whose old
        document is not known): straight on the store. None: the full path."""
        q = d.get("query") or {}
        fields = d.get("fields") or None
        if list(q.keys()) != ["_id"] or isinstance(q["_id"], dict) or d.get("sort") or d.get("new"):
            return None
        st = c._store
        if any(ix.get("unique") for ix in st.indexes.values()):
            return None
        try:
            old = st._documents.get(q["_id"])
        except TypeError:
            return None
        proj = self._project(old, fields) if fields else old
        if fields and old is not None and proj is None:
            return None
        if d.get("remove"):
            if old is not None:
                st._documents.pop(q["_id"], None)
            return self.ok(req, lastErrorObject={"n": 1 if old is not None else 0}, value=proj)
        upd = d.get("update")
        if not isinstance(upd, dict) or any(k.startswith("$") for k in upd) or \
                ("_id" in upd and upd["_id"] != q["_id"]):
            return None
        if old is None and not (d.get("upsert") and st.is_created):
            return None
        doc = OrderedDict([("_id", q["_id"])])
        for k, v in upd.items():
            if k != "_id":
                doc[k] = v
        size = len(bson.encode(doc))
        if size > MAX_BSON:
            # as mongod (BSONObjectTooLarge); libmongoc checks inserts and
            # updates itself, but not a findAndModify's replacement
            return self.err(req, 10334, "BSONObj size: %d (0x%x) is invalid: document too large, "
                            "size must be between 0 and %d (16MB)" % (size, size, MAX_BSON))
        st._documents[q["_id"]] = doc
        leo = OrderedDict([("n", 1), ("updatedExisting", old is not None)])
        if old is None:
            leo["upserted"] = q["_id"]
        return self.ok(req, lastErrorObject=leo, value=proj)

    def find_and_modify(self, req, c, d):
        fast = self.fast_find_and_modify(req, c, d)
        if fast is not None:
            return fast
        q = d.get("query") or {}
        sort = list(d["sort"].items()) if d.get("sort") else None
        fields = d.get("fields") or None
        if d.get("remove"):
            old = c.find_one_and_delete(q, projection=fields, sort=sort)
            return self.ok(req, lastErrorObject={"n": 1 if old is not None else 0},
                           value=old)
        upd = d.get("update")
        if upd is None or isinstance(upd, list):
            return self.err(req, 9, "findAndModify needs an update document or remove")
        existed = c.find_one(q, projection={"_id": 1}, sort=sort)
        upsert = bool(d.get("upsert"))
        if existed is None and not upsert:
            return self.ok(req, lastErrorObject={"n": 0, "updatedExisting": False}, value=None)
        if existed is not None:
            q = {"_id": existed["_id"]}
        old = c.find_one(q, projection=fields) if not d.get("new") else None
        r = c._update(q, upd, upsert=upsert)
        leo = OrderedDict([("n", 1), ("updatedExisting", existed is not None)])
        if r.get("upserted") is not None:
            leo["upserted"] = r["upserted"]
            q = {"_id": r["upserted"]}
        val = c.find_one(q, projection=fields) if d.get("new") else old
        return self.ok(req, lastErrorObject=leo, value=val)

    # -- TTL monitor (as mongod's: a periodic sweep)
    def ttl_loop(self):
        while True:
            time.sleep(self.ttl_interval)
            with self.lock:
                now = datetime.datetime.utcnow()
                for (db, coll), specs in list(self.ttl.items()):
                    docs = self.client[db][coll]._store._documents
                    dead = []
                    for k, doc in list(docs.items()):
                        for field, secs in specs:
                            v = doc.get(field)
                            if isinstance(v, datetime.datetime) and \
                                    (now - v.replace(tzinfo=None)).total_seconds() >= secs:
                                dead.append(k)
                                break
                    for k in dead:
                        docs.pop(k, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port", nargs="?", type=int, default=0)
    ap.add_argument("--ttl-interval", type=float, default=60.0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="answer every command this late (tests of what is in flight)")
    a = ap.parse_args()
    faulthandler.register(signal.SIGUSR1)     # kill -USR1: every thread's stack on stderr
    if not a.verbose:
        _quiet_reprs()
    emu = Emulator(a.ttl_interval, a.delay_ms)
    srv = mockupdb.MockupDB(port=a.port, verbose=a.verbose)
    srv._address = ("127.0.0.1", a.port)     # never 'localhost' (could be ::1 or all)
    srv.autoresponds(emu.handle)
    port = srv.run()
    t = threading.Thread(target=emu.ttl_loop, daemon=True)
    t.start()
    sys.stdout.write("port %d\n" % port)
    sys.stdout.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
