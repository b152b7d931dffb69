"""Large values (step results, params, payloads, output: up to 1 MiB of JSON) in items.

A value is stored inline as text when small, zlib-compressed as binary when that fits, and
otherwise split into chunk items written in the same transaction as their owner, so readers see
all of it or none (see :mod:`lambda_workflows.aws.items`).
"""

from __future__ import annotations

import zlib

from .attributes import get_s, n, s
from .item_keys import Item, chunk_sk

INLINE_LIMIT = 64 * 1024  # text up to this size is stored as is: readable in the console
CHUNK_SIZE = 300_000  # bytes per chunk, well under the 400 KB item limit with its keys


def put_blob(
    item: Item, name: str, text: str, owner_sk: str, pk: str, ttl: float, tag: str = ""
) -> list[Item]:
    """Store ``text`` in ``item[name]`` (inline, compressed, or chunked); return chunk items.
    Chunks get sort keys with ``tag`` (see :func:`chunk_sk`), which the item then records."""
    raw = text.encode()
    if len(raw) <= INLINE_LIMIT:
        item[name] = s(text)
        return []
    packed = zlib.compress(raw, 6)
    if len(packed) <= CHUNK_SIZE:
        item[f"{name}_z"] = {"B": packed}
        return []
    parts = [packed[i : i + CHUNK_SIZE] for i in range(0, len(packed), CHUNK_SIZE)]
    item[f"{name}_chunks"] = n(len(parts))
    if tag:
        item[f"{name}_chunk_tag"] = s(tag)
    return [
        {
            "pk": s(pk),
            "sk": s(chunk_sk(owner_sk, i, tag)),
            "chunk": {"B": part},
            "expires_at": n(ttl),
        }
        for i, part in enumerate(parts)
    ]


def get_blob(item: Item, name: str, chunks: dict[str, Item]) -> str | None:
    """Read a value stored by :func:`put_blob`; None when absent or its chunks are missing."""
    if name in item:
        return str(item[name]["S"])
    if f"{name}_z" in item:
        return zlib.decompress(bytes(item[f"{name}_z"]["B"])).decode()
    count = item.get(f"{name}_chunks")
    if count is None:
        return None
    owner = item["sk"]["S"]
    tag = get_s(item, f"{name}_chunk_tag") or ""  # untagged: written before tags, or params
    parts = [chunks.get(chunk_sk(owner, i, tag)) for i in range(int(count["N"]))]
    if any(part is None for part in parts):
        return None
    return zlib.decompress(b"".join(bytes(p["chunk"]["B"]) for p in parts if p)).decode()


def has_chunks(item: Item, name: str) -> bool:
    """True when the value ``name`` of the item lives in chunk items."""
    return f"{name}_chunks" in item
