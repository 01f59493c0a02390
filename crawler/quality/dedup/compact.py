"""Near-duplicate state in Redis at under 200 bytes per page, two round trips per page.

The datasketch layout (``crawler.quality.dedup.minhash.MinHashIndex`` over Redis) keeps, per page, a
512-byte signature, a pickled key, a list of band keys, and one Redis set per LSH bucket:
about 9,300 bytes. This layout keeps the same facts in small Redis hashes that stay in
Redis' compact *listpack* encoding (at most 128 entries, values of at most 64 bytes each):

    {p}:d:{part}   doc key (8 bytes)  -> cluster key (8) + host number (4) + signature
    {p}:e:{part}   text digest (8)    -> doc key (8)             exact-duplicate owners
    {p}:b:{part}   band tag (4)       -> up to 8 doc keys (8 each)  LSH buckets
    {p}:s:{part}   cluster key (8)    -> size, for clusters of two or more
    {p}:hosts, {p}:hostnames, {p}:hostseq, {p}:hostcounts   host numbers and page counts

``part`` is the top ``partition_bits`` of the key for buckets (6 entries per page), three
bits fewer for the other families (one entry per page), so every hash holds about the same
number of entries: ``partition_bits_for(pages)`` sizes it for about 64 (16 bits: 700,000
pages). Fewer pages pay a fixed cost instead (about 80 bytes per hash: 7 MB at 16 bits);
more pages turn hashes past 128 entries into ordinary hash tables, which still work but
take about three times the memory, so raise the bits with the crawl (a new prefix).
The signature kept for confirming candidates is the low ``signature_bits`` of each MinHash
value (b-bit MinHash, Li and König 2010): two values agree with probability
``J + (1 - J) / 2 ** b``, so ``J`` is estimated without bias from the agreement rate.
Bands are ``bands`` slices of ``rows`` values, each hashed to 8 bytes (the bucket's
partition and its 4-byte tag), instead of the values themselves.

A page costs one Lua call to probe (known id, exact owner, bucket candidates with their
records) and one to commit (record, buckets, cluster size, host counts); a known page only
the first. Document ids must be 16 hex digits (``index.base.doc_id_for``).
"""

from __future__ import annotations

import math

import numpy as np
import xxhash

from crawler.quality.dedup.minhash import MinHasher, Signature
from crawler.quality.dedup.store import DedupStore, PairCounts

#: Buckets keep the first few documents only: a bucket shared by many pages (a template's
#: shingles) is no better a candidate source, and an 8-key value stays listpack-sized.
BUCKET_CAP = 8

_LUA_PART = """
local prefix, bits = ARGV[1], tonumber(ARGV[2])
local function part(s)
  local a, b, c = string.byte(s, 1, 3)
  return math.floor((a * 65536 + b * 256 + c) / 2 ^ (24 - bits))
end
local function key(family, s)
  local p = part(s)
  if family ~= 'b' then p = math.floor(p / 8) end
  return prefix .. ':' .. family .. ':' .. p
end
local function host_name(record)
  return redis.call('HGET', prefix .. ':hostnames', string.sub(record, 9, 12)) or ''
end
"""

#: ARGV: prefix, bits, doc key, digest ('' for none), cap, band keys (8 bytes each)...
#: -> {'known', cluster, host} | {'exact', owner, cluster, host} | {'probe', k, c, h, sig, ...}
_PROBE = _LUA_PART + """
local doc, digest, cap = ARGV[3], ARGV[4], tonumber(ARGV[5])
local record = redis.call('HGET', key('d', doc), doc)
if record then return {'known', string.sub(record, 1, 8), host_name(record)} end
if digest ~= '' then
  local ekey = key('e', digest)
  local owner = redis.call('HGET', ekey, digest)
  if not owner then
    redis.call('HSET', ekey, digest, doc)
  elseif owner ~= doc then
    local orec = redis.call('HGET', key('d', owner), owner)
    if orec then return {'exact', owner, string.sub(orec, 1, 8), host_name(orec)} end
    return {'exact', owner, owner, ''}
  end
end
local out, seen = {'probe'}, {}
for i = 6, #ARGV do
  local band = ARGV[i]
  local members = redis.call('HGET', key('b', band), string.sub(band, 5, 8))
  if members then
    for j = 1, #members, 8 do
      local other = string.sub(members, j, j + 7)
      if other ~= doc and not seen[other] then
        seen[other] = true
        local orec = redis.call('HGET', key('d', other), other)
        if orec then
          out[#out + 1] = other
          out[#out + 1] = string.sub(orec, 1, 8)
          out[#out + 1] = host_name(orec)
          out[#out + 1] = string.sub(orec, 13)
        end
      end
    end
  end
end
return out
"""

#: ARGV: prefix, bits, doc key, cluster key, host, signature, own copy (0/1; -1: count
#: nothing), cap, bands...
#: -> {cluster, host pages, host copies}
_COMMIT = _LUA_PART + """
local doc, cluster, host, sig = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local copy, cap = tonumber(ARGV[7]), tonumber(ARGV[8])
local number = redis.call('HGET', prefix .. ':hosts', host)
if not number then
  local n = redis.call('INCR', prefix .. ':hostseq')
  number = string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
                       math.floor(n / 256) % 256, n % 256)
  if redis.call('HSETNX', prefix .. ':hosts', host, number) == 1 then
    redis.call('HSET', prefix .. ':hostnames', number, host)
  else
    number = redis.call('HGET', prefix .. ':hosts', host)
  end
end
local dkey = key('d', doc)
if redis.call('HSETNX', dkey, doc, cluster .. number .. sig) == 0 then
  cluster = string.sub(redis.call('HGET', dkey, doc), 1, 8)
else
  if cluster ~= doc then
    local skey = key('s', cluster)
    if redis.call('HINCRBY', skey, cluster, 1) == 1 then redis.call('HINCRBY', skey, cluster, 1) end
  end
  for i = 9, #ARGV do
    local band = ARGV[i]
    local bkey, tag = key('b', band), string.sub(band, 5, 8)
    local members = redis.call('HGET', bkey, tag) or ''
    if #members < cap * 8 then redis.call('HSET', bkey, tag, members .. doc) end
  end
end
if copy < 0 then return {cluster, 0, 0} end
local counts = prefix .. ':hostcounts'
local pages = redis.call('HINCRBY', counts, number .. 'p', 1)
local copies = redis.call('HINCRBY', counts, number .. 'c', copy)
return {cluster, pages, copies}
"""


def partition_bits_for(pages: int, bands: int = 6, per_hash: int = 64) -> int:
    """Partition bits that give ``per_hash`` bucket entries per hash at ``pages`` pages."""
    return min(24, max(4, math.ceil(math.log2(max(1, pages * bands / per_hash)))))


def doc_key(doc_id: str) -> bytes:
    """The 8 bytes of a 16-hex-digit document id."""
    try:
        key = bytes.fromhex(doc_id)
    except ValueError:
        key = b""
    if len(key) != 8:
        raise ValueError(
            f"the compact dedup layout needs 16-hex-digit document ids (doc_id_for), "
            f"got {doc_id!r}; use DEDUP_REDIS_LAYOUT = 'datasketch' for other ids"
        )
    return key


class BitSignatures:
    """b-bit MinHash: the low ``bits`` of each value, packed, and the Jaccard estimate."""

    def __init__(self, num_perm: int, bits: int):
        if bits not in (1, 2, 4, 8):
            raise ValueError("signature bits must be 1, 2, 4 or 8")
        self.num_perm = num_perm
        self.bits = bits
        self.size = num_perm * bits // 8

    def pack(self, values: np.ndarray) -> bytes:
        low = (np.asarray(values, dtype=np.uint32) & ((1 << self.bits) - 1)).astype(np.uint8)
        per_byte = 8 // self.bits
        shifts = np.arange(per_byte, dtype=np.uint8) * self.bits
        return (low.reshape(-1, per_byte) << shifts).sum(axis=1).astype(np.uint8).tobytes()

    def unpack(self, packed: bytes) -> np.ndarray:
        raw = np.frombuffer(packed, dtype=np.uint8)
        per_byte = 8 // self.bits
        shifts = np.arange(per_byte, dtype=np.uint8) * self.bits
        return ((raw[:, None] >> shifts) & ((1 << self.bits) - 1)).reshape(-1)

    def jaccard(self, values: np.ndarray, packed: list[bytes]) -> np.ndarray:
        """Estimated Jaccard similarity of ``values`` (full MinHash) with each packed one."""
        mine = self.unpack(self.pack(values))
        others = np.stack([self.unpack(p) for p in packed])
        agree = (others == mine).mean(axis=1)
        chance = 1.0 / (1 << self.bits)
        return np.clip((agree - chance) / (1 - chance), 0.0, 1.0)


class CompactRedisStore(DedupStore):
    """The deduplicator's whole state (owners, clusters, hosts, MinHash LSH) in compact hashes.

    ``check_document`` is the deduplicator's fast path (two round trips); the ``DedupStore``
    methods answer single questions on the same keys.
    """

    def __init__(
        self,
        client,
        prefix: str = "dedup",
        threshold: float = 0.7,
        hasher: MinHasher | None = None,
        bands: int = 6,
        rows: int = 3,
        signature_bits: int = 2,
        partition_bits: int = 16,
    ):
        self.redis = client
        self.prefix = f"{prefix}:c"
        self.threshold = threshold
        self.hasher = hasher or MinHasher()
        if bands * rows > self.hasher.num_perm:
            raise ValueError(f"{bands} bands of {rows} rows need {bands * rows} permutations")
        if not 4 <= partition_bits <= 24:
            raise ValueError("partition bits must be between 4 and 24")
        self.bands, self.rows = bands, rows
        self.signatures = BitSignatures(self.hasher.num_perm, signature_bits)
        self.bits = partition_bits
        self._probe = client.register_script(_PROBE)
        self._commit = client.register_script(_COMMIT)

    @classmethod
    def from_url(cls, redis_url: str, **options) -> CompactRedisStore:
        import redis

        return cls(redis.Redis.from_url(redis_url), **options)

    def band_keys(self, values: np.ndarray) -> list[bytes]:
        """One 8-byte hash per band of ``rows`` values (the band number mixed in)."""
        values = np.ascontiguousarray(values, dtype=np.uint32)
        return [
            xxhash.xxh3_64_digest(values[b * self.rows : (b + 1) * self.rows].tobytes(), seed=b)
            for b in range(self.bands)
        ]

    def _head(self) -> list:
        return [self.prefix, self.bits]

    def check_document(
        self,
        doc_id: str,
        host: str,
        text_key: str | None,
        signature: Signature | None,
    ) -> tuple[str, str, str, str, int | None, int | None]:
        """``(kind, cluster_id, match, match_host, host_pages, host_copies)`` of a document.

        ``kind`` as ``crawler.quality.dedup.core.Verdict``; ``signature`` is None for texts too
        short for the near check. Host counts are None for a known document (nothing is counted
        again).
        """
        doc = doc_key(doc_id)
        digest = bytes.fromhex(text_key)[:8] if text_key else b""
        bands = self.band_keys(signature.hashvalues) if signature is not None else []
        reply = self._probe(args=[*self._head(), doc, digest, BUCKET_CAP, *bands])
        kind = reply[0].decode()
        if kind == "known":
            return "known", reply[1].hex(), "", reply[2].decode(), None, None
        match, match_cluster, match_host = "", doc, ""
        if kind == "exact":
            kind, match = "exact", reply[1].hex()
            match_cluster, match_host = reply[2], reply[3].decode()
            bands, packed = [], b""
        else:
            kind = "new"
            packed = self.signatures.pack(signature.hashvalues) if signature is not None else b""
            best = self._best(signature, reply[1:]) if signature is not None else None
            if best is not None:
                kind = "near"
                match, match_cluster, match_host = best[0].hex(), best[1], best[2]
        own_copy = int(kind != "new" and match_host == host)
        cluster, pages, copies = self._commit(
            args=[*self._head(), doc, match_cluster, host, packed, own_copy, BUCKET_CAP, *bands]
        )
        return kind, cluster.hex(), match, match_host, int(pages), int(copies)

    def _best(self, signature: Signature, records: list) -> tuple[bytes, bytes, str] | None:
        if not records:
            return None
        keys, clusters = records[0::4], records[1::4]
        hosts, packed = records[2::4], records[3::4]
        keep = [i for i, p in enumerate(packed) if len(p) == self.signatures.size]
        if not keep:
            return None
        similarity = self.signatures.jaccard(signature.hashvalues, [packed[i] for i in keep])
        best = None
        for i, sim in zip(keep, similarity.tolist(), strict=True):
            if sim < self.threshold:
                continue
            if best is None or sim > best[0] or (sim == best[0] and keys[i] < keys[best[1]]):
                best = (sim, i)
        if best is None:
            return None
        i = best[1]
        return keys[i], clusters[i], hosts[i].decode()

    # The DedupStore interface, for single questions on the same state.

    def _key(self, family: str, raw: bytes) -> str:
        part = int.from_bytes(raw[:3], "big") >> (24 - self.bits)
        return f"{self.prefix}:{family}:{part if family == 'b' else part >> 3}"

    def claim_exact(self, text_key: str, doc_id: str) -> str:
        digest = bytes.fromhex(text_key)[:8]
        key = self._key("e", digest)
        self.redis.hsetnx(key, digest, doc_key(doc_id))
        return self.redis.hget(key, digest).hex()

    def assign(self, doc_id: str, cluster_id: str, host: str) -> str:
        cluster, _, _ = self._commit(
            args=[*self._head(), doc_key(doc_id), doc_key(cluster_id), host, b"", -1, 0]
        )
        return cluster.hex()

    def lookup(self, doc_id: str) -> tuple[str, str] | None:
        doc = doc_key(doc_id)
        record = self.redis.hget(self._key("d", doc), doc)
        if record is None:
            return None
        host = self.redis.hget(f"{self.prefix}:hostnames", record[8:12]) or b""
        return record[:8].hex(), host.decode()

    def cluster_size(self, cluster_id: str) -> int:
        cluster = doc_key(cluster_id)
        size = self.redis.hget(self._key("s", cluster), cluster)
        if size is not None:
            return int(size)
        return int(self.redis.hexists(self._key("d", cluster), cluster))

    def count_host(self, host: str, copy: bool) -> tuple[int, int]:
        number = self.redis.hget(f"{self.prefix}:hosts", host)
        if number is None:  # a host is numbered when its first page is committed
            return 0, 0
        counts = f"{self.prefix}:hostcounts"
        pipe = self.redis.pipeline()
        pipe.hincrby(counts, number + b"p", 1)
        pipe.hincrby(counts, number + b"c", int(copy))
        pages, copies = pipe.execute()
        return int(pages), int(copies)

    def host_pages(self, host: str) -> int:
        number = self.redis.hget(f"{self.prefix}:hosts", host)
        if number is None:
            return 0
        return int(self.redis.hget(f"{self.prefix}:hostcounts", number + b"p") or 0)

    def count_shared(self, host: str, other: str, backlink: bool,
                     other_backlink: bool = False) -> PairCounts:
        # one small hash for the few host pairs that share pages (mirrors, not every page)
        pairs = f"{self.prefix}:pairs"
        pipe = self.redis.pipeline()
        pipe.hincrby(pairs, f"{host} {other} shared", 1)
        pipe.hincrby(pairs, f"{other} {host} shared", 1)
        pipe.hincrby(pairs, f"{host} {other} back", int(backlink))
        pipe.hincrby(pairs, f"{other} {host} back", int(other_backlink))
        pipe.hincrby(pairs, f"{host} {other} later", 1)
        pipe.hget(pairs, f"{other} {host} later")
        return PairCounts(int(v or 0) for v in pipe.execute())

    def __len__(self) -> int:
        """Documents recorded (a scan: for tests and benchmarks)."""
        return sum(
            self.redis.hlen(k) for k in self.redis.scan_iter(match=f"{self.prefix}:d:*")
        )
