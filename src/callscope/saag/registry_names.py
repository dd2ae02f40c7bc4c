"""Stage 1's names of a registry and the Nearest Candidate Score over them (SAAG paper,
section 2.1, eq. 2) at registry scale.

A registry's names are read once per distinct content into a :class:`NameTable`
(:func:`name_table`: a registry copied into every row of a results file is read once), and
:func:`nearest` finds the NCS and its name over one, with the same floats and argmax as scoring
every name in order (:func:`~callscope.saag.intrinsic.ncs_score`), using rapidfuzz's batch
scorer and a trigram posting table. The registry index (:mod:`callscope.saag.registry_index`)
keeps which table belongs to which registry list and calls :func:`nearest` for a name not in
it.
"""

from __future__ import annotations

from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

from callscope.core.memo import sized_cache
from callscope.saag import intrinsic as m


def trigrams(s: str) -> set[str]:
    s = s.lower()
    return {s[i : i + 3] for i in range(len(s) - 2)}


class NameTable:
    """Stage 1's NCS view of a registry's names, keyed by their content (a registry copied
    into every row of a results file is read once, :func:`name_table`): the names and
    their lowercased forms; for a registry of more than :data:`_SMALL` names, built on the
    first NCS over it at C level (numpy), the names as an object array (a candidate set is
    one C-level selection), their lengths, which are plain (:func:`_plain`) and every
    lowercased trigram as a sorted posting table; each lowercased whitespace
    token's positions (built on the first name that needs them)."""

    __slots__ = ("names", "lowered", "column", "lengths", "plain", "slices", "owner", "_tokens")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.lowered = [n.lower() for n in names]
        self._tokens: dict[str, list[int]] | None = None
        if len(names) > _SMALL:
            self._index()

    def _index(self) -> None:
        import numpy as np  # lazy: only a large registry's unknown name needs it

        count = len(self.names)
        self.column = np.empty(count, dtype=object)
        self.column[:] = self.names
        self.lengths = np.fromiter(map(len, self.names), dtype=np.float64, count=count)
        self.plain = np.fromiter(map(_plain, self.names), dtype=bool, count=count)
        # every lowercased trigram of every name as one integer (three code points of 21
        # bits), with the position of its name
        joined = "".join(self.lowered)
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        points = points.astype(np.uint64)
        ends = np.cumsum(np.fromiter(map(len, self.lowered), dtype=np.int64, count=count))
        if len(points) >= 3:
            codes = (points[:-2] << np.uint64(42)) | (points[1:-1] << np.uint64(21)) | points[2:]
            at = np.arange(len(points) - 2)
            owner = np.searchsorted(ends, at, side="right")
            inside = at + 2 < ends[owner]  # the three characters are of one name
            codes, owner = codes[inside], owner[inside]
        else:
            codes, owner = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        # sorted by trigram: each distinct trigram's names are one slice of ``owner``
        order = np.argsort(codes, kind="stable")
        codes, self.owner = codes[order], owner[order]
        distinct, starts = np.unique(codes, return_index=True)
        bounds = np.append(starts, len(codes)).tolist()
        mask = (1 << 21) - 1
        self.slices = {
            chr(c >> 42) + chr((c >> 21) & mask) + chr(c & mask): (bounds[j], bounds[j + 1])
            for j, c in enumerate(distinct.tolist())
        }

    def sharing(self, grams: set[str]) -> Any:
        """The positions (ascending) of the names sharing one of ``grams`` (lowercased
        trigrams): one slice of the posting table per trigram."""
        import numpy as np

        owner, slices = self.owner, self.slices
        parts = [owner[ab[0] : ab[1]] for g in grams if (ab := slices.get(g)) is not None]
        mask = np.zeros(len(self.names), dtype=bool)
        if parts:
            mask[np.concatenate(parts)] = True
        return np.flatnonzero(mask)

    def token_positions(self, token: str) -> list[int]:
        """The positions of the names one of whose lowercased whitespace tokens is
        ``token``."""
        if self._tokens is None:
            tokens: dict[str, list[int]] = {}
            for i, low in enumerate(self.lowered):
                for tok in set(low.split()):
                    tokens.setdefault(tok, []).append(i)
            self._tokens = tokens
        return self._tokens.get(token, [])


def _plain(name: str) -> bool:
    """Printable ASCII without a space: one whitespace token, the same for rapidfuzz and
    ``str.split``."""
    return name.isascii() and name.isprintable() and " " not in name


#: a registry of at most this many names is scored name by name (no index: numpy's fixed cost
#: is more than the scoring it would save)
_SMALL = 64


#: name tables kept (:func:`name_table`), and the characters of names they hold together: a
#: table weighs about 265 bytes per character of CJK names (its trigram postings), so 64
#: registries of 1,200 names of 100 characters would hold about 2 GB; a registry's names
#: longer than this are kept while they are the newest only
NAME_TABLES = 64
NAME_TABLE_CHARS = 200_000


class NameKey(tuple):  # type: ignore[type-arg]
    """A registry's names as :func:`name_table`'s key: a tuple of strings that computes its
    hash once (a look-up of a 10,000-name registry's table hashed 10,000 strings: 45 us)."""

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = tuple.__hash__(self)
        return h  # type: ignore[no-any-return]


@sized_cache(NAME_TABLES, NAME_TABLE_CHARS)
def name_table(names: tuple[str, ...]) -> NameTable:
    """The :class:`NameTable` of a registry's names, once per distinct content (the last
    :data:`NAME_TABLES` kept whose names hold at most :data:`NAME_TABLE_CHARS` characters
    together, and the newest; :func:`forget_names` drops one)."""
    return NameTable(names)


def forget_names(names: tuple[str, ...]) -> None:
    """Drop the kept :class:`NameTable` of ``names`` (its registry's owner let it go:
    :func:`callscope.saag.cascade.forget_registry`); a table another registry's index holds
    stays with that index."""
    name_table.cache_forget(names)  # type: ignore[attr-defined]


#: names whose WRatio, as rapidfuzz's batch scorer reports it, or whose bound is, within this
#: of the best are scored again one by one: a batch score is not exact within about 1e-6,
#: and every equal score must be seen for the first-on-ties rule
_WRATIO_SLACK = 1.0


def nearest(name: str, table: NameTable) -> tuple[float, str | None]:
    """NCS over an index; the same floats and argmax as scoring every name in order.

    Candidates are the names sharing a lowercased trigram with ``name``
    (:meth:`NameTable.sharing`). Those sharing a whitespace token with it (a
    Jaccard term above 0) are scored exactly. For the others the Jaccard term is 0, so only
    those with the highest WRatio can win. One rapidfuzz batch pass (Indel distance, C level,
    every name) gives each name's ``ratio`` and LCS ``L``, from which WRatio is known or
    bounded without computing it (rapidfuzz's definition, for a pair of one-token strings, the
    shorter of length ``s``, ``lr`` the length ratio): ``lr < 1.5``: WRatio = ratio;
    otherwise WRatio = max(ratio, k partial_ratio) <= max(ratio, k 200 L / (s + L)), ``k``
    0.9 (``lr <= 8``) or 0.6; any other pair: <= max(ratio, 95) or max(ratio, 100 k). The
    names are walked by that bound, highest first; the walk ends below the best WRatio found
    less ``_WRATIO_SLACK``; the names within the slack are scored exactly
    (:func:`~callscope.saag.intrinsic.ncs_score`). Ties go to the first registry position.
    """
    grams = trigrams(name)
    if not grams:
        return 0.0, None
    names = table.names
    if len(names) <= _SMALL:  # the definition itself: every candidate scored
        best, best_i = 0.0, -1
        for i, lowered in enumerate(table.lowered):
            if any(g in lowered for g in grams):
                score = m.ncs_score(name, names[i])
                if best_i < 0 or score > best:
                    best, best_i = score, i
        return (best, names[best_i]) if best_i >= 0 else (0.0, None)
    import numpy as np  # lazy: the table imported it already

    low = name.lower()
    candidates = table.sharing(grams)
    if not len(candidates):
        return 0.0, None
    exact: set[int] = set()
    for tok in set(low.split()):
        positions = table.token_positions(tok)
        if positions:
            exact.update(np.intersect1d(positions, candidates).tolist())
    n = len(name)
    pool = table.column[candidates]  # the candidates' names (one C-level selection)
    lengths = table.lengths[candidates]  # floats: no int-to-float step in what follows
    dist = process.cdist([name], pool, scorer=Indel.distance, dtype=np.float64, workers=1)[0]
    # every candidate has a character (it shares a trigram): no length below 1
    total = lengths + n
    ratio = 100.0 - 100.0 * dist / total
    shorter = np.minimum(lengths, n)
    long_ratio = (total - shorter) / shorter
    near = long_ratio < 1.5
    if _plain(name):
        one_token = table.plain[candidates]
        known = one_token & near  # the bound is the WRatio itself
        lcs = (total - dist) * 0.5
        partial = 200.0 * lcs / (shorter + lcs)
        np.minimum(partial, 100.0, out=partial)
        partial[~one_token] = 100.0
        cap = np.where(long_ratio <= 8.0, 0.9, 0.6)
        cap *= partial
    else:  # no pair is one-token: no known WRatio, every partial ratio at most 100
        known = np.zeros(len(pool), dtype=bool)
        cap = np.where(long_ratio <= 8.0, 90.0, 60.0)
    cap[near] = 95.0
    bound = np.maximum(ratio, cap, out=cap)
    bound[known] = ratio[known]
    # the best known WRatio is a floor of the best: only the names bounded above it less
    # the slack are walked (all of them when none is known)
    floor = float(bound[known].max()) if known.any() else -1.0
    walk = np.flatnonzero(bound >= floor - _WRATIO_SLACK)
    walk = walk[np.argsort(-bound[walk], kind="stable")]
    best = -1.0
    scored: list[tuple[float, int]] = []
    for k, b, is_known, i in zip(
        walk.tolist(),
        bound[walk].tolist(),
        known[walk].tolist(),
        candidates[walk].tolist(),
        strict=True,
    ):
        if b < best - _WRATIO_SLACK:
            break
        w = b if is_known else fuzz.WRatio(name, pool[k])
        scored.append((w, i))
        best = max(best, w)
    exact.update(i for w, i in scored if w >= best - _WRATIO_SLACK)
    top, top_i = max(((m.ncs_score(name, names[i]), i) for i in exact), key=_by_score_then_first)
    return top, names[top_i]


def _by_score_then_first(scored: tuple[float, int]) -> tuple[float, int]:
    return scored[0], -scored[1]
