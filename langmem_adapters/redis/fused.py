"""A Query Engine hybrid search under the information fusion in one script and one round, when
the server answers every condition (the usual case): the vector side's KNN window, the lexical
candidates, their fusion by ``core.information.fuse_information``'s rules and the fused page's
records alone (``lua/fused.lua``), where the two-script way (``redis.information``) sends both
sides, fuses here and reads in a second round the records of the lexical candidates the page takes
(on LongMemEval ~96% of searches). When the window cannot tell the page (its last row ties with the
page's last, or rows were gone) both sides are asked again the two-script way."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.values import load_json
from langmem_adapters.redis.information import Information
from langmem_adapters.redis.lexical import ItemKey, Lexical
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call
from langmem_adapters.redis.search import Searcher, standard_distance

__all__ = ["Fused", "FusedPage"]


@dataclass(frozen=True, slots=True)
class FusedPage:
    """The fused page's records (each with its distance and fused score) and, when the vector side
    ran short of the page, the (namespace text, key) of every item it scored (else None)."""

    records: list[Record]
    scored: list[ItemKey] | None


@dataclass(frozen=True, slots=True)
class Fused:
    """One hybrid search sent as the ``fused`` script: its vector side (first asking ``window``
    rows), its lexical side, and the two sides' own calls, sent when the script cannot fuse."""

    vector: Searcher
    lexical: Information
    window: int
    sides: tuple[Call, Call]

    @classmethod
    def build(
        cls, vector: Searcher, lexical: Lexical | None, window: int, calls: Sequence[Call]
    ) -> Fused | None:
        """The search sent as one script (``calls``: the lexical side's, built once), or None:
        not under the information fusion, a condition checked on the rows (but a namespace prefix,
        which the script checks), or no rare query word (the vector side alone then)."""
        if not isinstance(lexical, Information) or not lexical.exact or not calls:
            return None
        return cls(vector, lexical, window, (vector.call(window), calls[0]))

    def call(self) -> Call:
        """The ``fused`` script's call: the page, the fusion's settings, the window's FT.SEARCH
        (the search script's arguments past its own three) and the lexical side's arguments."""
        lex = self.lexical
        h, op = lex.hybrid, lex.op
        knn = self.sides[0].args[3:]
        head = (op.offset, op.limit, lex.want, h.floor, h.vector_weight, h.lexical_weight)
        # the prefix the window's rows are checked under: its query left it out (the whole index)
        under = "" if self.vector.exact else nsp.join(op.namespace_prefix)
        fusion = (*head, lex.spec.distance, self.window, under, len(knn))
        return Call((*fusion, *knn, *self.sides[1].args), script="fused")

    def page(self, reply: Any) -> FusedPage | None:
        """The page of the script's reply, or None when it could not fuse (see the module)."""
        fused, *rest = load_json(reply)
        if not fused:
            return None
        rows, short, counts, size = rest
        self.lexical.keep_counts(counts, size)
        spec = self.lexical.spec
        records = []
        for meta, created, d, score in rows:
            r = Record.parse(meta, created)
            r.distance = math.inf if d is None else standard_distance(spec, float(d))
            r.score = float(score)
            records.append(r)
        keys = self.lexical.keys
        return FusedPage(records, None if short is None else [keys.item_id(n) for n in short])
