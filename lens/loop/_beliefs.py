"""Beliefs over candidate windows, one per requirement, and the generalized likelihood ratio that stops the loop
(derivations: ``docs/pipeline.md`` § Beliefs and the stopping rule, ``docs/readings.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lens._config import LoopSettings
from lens._terms import normalise

__all__ = ["Belief", "beta", "stopping_threshold", "ELSEWHERE"]

ELSEWHERE = "<elsewhere>"


def beta(t: int, delta: float) -> float:
    """The stopping threshold's exploration rate: log((1 + log(1 + t)) / δ) after t observation rounds."""
    return math.log((1.0 + math.log(1.0 + max(t, 0))) / delta)


def stopping_threshold(rounds: int, intent: str, loop: LoopSettings, scale: float = 1.0) -> float:
    """β(t, δ)·γ(intent)·scale: the GLR every requirement must reach after ``rounds`` observation rounds for the
    loop to stop certified (``scale`` < 1: the relaxed threshold of a self-correction). The one place the
    threshold is computed."""
    return beta(rounds, loop.delta) * loop.gamma.get(intent, 1.0) * scale


@dataclass
class Belief:
    """Log-weights over candidate windows (by key) plus "elsewhere", for one requirement."""

    requirement_id: str
    elsewhere_mass: float = 0.2
    log_w: dict[str, float] = field(default_factory=dict)
    confirmed: set[str] = field(default_factory=set)  # windows with a verified positive observation
    values: dict[str, str] = field(default_factory=dict)  # confirmed window -> the (normalised) value it verified
    observations: int = 0
    prior_scale: float | None = None  # prior mass per unit of prior weight, set by init (None: no scale yet)
    tail_prior: float = 0.0  # prior mass "elsewhere" still stands for (windows not yet enumerated)

    def __post_init__(self) -> None:
        self.log_w.setdefault(ELSEWHERE, math.log(self.elsewhere_mass))

    def add_candidates(self, weights: dict[str, float]) -> None:
        """Add windows with prior weights (> 0, on the scale of ``init``'s). A new window was hiding in
        "elsewhere": it gets its prior mass (weight × ``prior_scale``) times ρ = P(elsewhere) / ``tail_prior``,
        the evidence factor shared by every window not yet enumerated; the new windows together take at most
        80 % of elsewhere's mass, and ρ stays what it was for the windows still outside. Without a prior scale
        (no ``init`` with positive weights) they share 80 % of elsewhere in proportion to their weights.
        Existing windows keep their beliefs."""
        new = {k: w for k, w in weights.items() if k not in self.log_w and w > 0}
        if not new:
            return
        post = self.posterior()
        pool = post.get(ELSEWHERE, 0.0)
        cap = 0.8 * pool  # some mass always stays outside the candidates
        total = sum(new.values())
        if self.prior_scale is not None and self.tail_prior > 0 and pool > 0:
            rho = pool / self.tail_prior
            mass = {k: rho * self.prior_scale * w for k, w in new.items()}
            fit = min(1.0, cap / sum(mass.values()))
            mass = {k: m * fit for k, m in mass.items()}
            self.tail_prior = max(self.tail_prior - sum(mass.values()) / rho, 1e-300)
        else:
            mass = {k: cap * w / total for k, w in new.items()}
        log_w = {k: math.log(max(p, 1e-300)) for k, p in post.items() if k != ELSEWHERE}
        log_w[ELSEWHERE] = math.log(max(pool - sum(mass.values()), 1e-300))
        for k, m in mass.items():
            log_w[k] = math.log(max(m, 1e-300))
        self.log_w = log_w

    def init(self, weights: dict[str, float]) -> None:
        """Fresh prior: candidates share 1 − elsewhere_mass in proportion to their weights."""
        total = sum(w for w in weights.values() if w > 0)
        self.log_w = {ELSEWHERE: math.log(self.elsewhere_mass)}
        self.prior_scale, self.tail_prior = None, self.elsewhere_mass
        if total <= 0:
            self.log_w[ELSEWHERE] = 0.0
            return
        self.prior_scale = (1.0 - self.elsewhere_mass) / total
        for k, w in weights.items():
            if w > 0:
                self.log_w[k] = math.log((1.0 - self.elsewhere_mass) * w / total)

    def update(self, key: str, log_lr: float, *, confirmed: bool, value: str = "") -> None:
        """Bayes update for one reading of window ``key`` with log likelihood ratio
        log P(reading | Z* = key) − log P(reading | Z* ≠ key); ``confirmed``: the reading is a verified
        positive. Only the ratio matters, so only ``key``'s weight moves before normalising (unknown keys are
        ignored). ``value``: the value the confirmed reading verified (groups windows; see the module docstring)."""
        if key not in self.log_w:
            return
        if confirmed:
            self.confirmed.add(key)
            if value and value.strip():
                self.values[key] = normalise(value)
        self.log_w[key] += log_lr
        self.observations += 1
        self._normalise()

    def _normalise(self) -> None:
        m = max(self.log_w.values())
        z = m + math.log(sum(math.exp(v - m) for v in self.log_w.values()))
        for k in self.log_w:
            self.log_w[k] -= z

    def posterior(self) -> dict[str, float]:
        if not self.log_w:
            return {}
        m = max(self.log_w.values())
        ws = {k: math.exp(v - m) for k, v in self.log_w.items()}
        z = sum(ws.values())
        return {k: w / z for k, w in ws.items()}

    def _group(self, key: str) -> tuple[str, str]:
        if key == ELSEWHERE:
            return ("elsewhere", "")
        value = self.values.get(key) if key in self.confirmed else None
        return ("value", value) if value else ("window", key)

    def _groups(self) -> dict[tuple[str, str], float]:
        """Log mass of each group (log-sum-exp of its windows' log weights)."""
        out: dict[tuple[str, str], float] = {}
        for k, v in self.log_w.items():
            g = self._group(k)
            if g in out:
                hi, lo = max(out[g], v), min(out[g], v)
                out[g] = hi + math.log1p(math.exp(lo - hi))
            else:
                out[g] = v
        return out

    def favoured(self) -> str | None:
        """The heaviest window (never "elsewhere") of the heaviest group of candidate windows, ties broken by
        key."""
        cands = [(v, k) for k, v in self.log_w.items() if k != ELSEWHERE]
        if not cands:
            return None
        groups = self._groups()
        best = max(cands, key=lambda x: (groups[self._group(x[1])], x[0], _neg(x[1])))
        return best[1]

    def reachable_glr(self, read: set[str], readings: int, most: float) -> float:
        """An upper bound on the GLR after ``readings`` more readings when each moves one window not in ``read`` by
        at most ``most`` in log weight and read windows are not read again: read windows keep their weights, and
        the ``readings`` heaviest unread windows ("elsewhere" counted whole, since a wider ranking turns it into
        windows) at best join the winning group at e^most times their weight while every other unread window
        falls to nothing. Infinite when no read window stands as an alternative to a possible winner."""
        post = self.posterior()
        groups: dict[tuple[str, str], float] = {}
        unread = []
        for key, p in post.items():
            if key != ELSEWHERE and key in read:
                g = self._group(key)
                groups[g] = groups.get(g, 0.0) + p
            else:
                unread.append(p)
        gain = sum(sorted(unread, reverse=True)[: max(readings, 0)]) * math.exp(most)
        winners = [(g, m) for g, m in groups.items() if g[0] == "value" or g[1] in self.confirmed]
        best = -math.inf
        for g, m in winners + [(("new", ""), 0.0)]:
            alt = max((v for h, v in groups.items() if h != g), default=0.0)
            if alt <= 0.0:
                return math.inf
            if m + gain > 0.0:
                best = max(best, math.log((m + gain) / alt))
        return max(best, 0.0)

    def could_favour(self, read: set[str], most: float) -> bool:
        """Whether one reading of some window not in ``read`` (at most ``most`` in log weight) could make it the
        favoured window: its weight × e^most at least the heaviest other group's."""
        groups = self._groups()
        for key, v in self.log_w.items():
            if key == ELSEWHERE or key in read:
                continue
            mine = self._group(key)
            rival = max((w for g, w in groups.items() if g != mine), default=-math.inf)
            if v + most >= rival:
                return True
        return False

    def what_if(self, key: str, log_lr: float, *, confirmed: bool) -> tuple[str | None, float]:
        """(the favoured window, the GLR) after a reading of ``key`` that moved its log weight by ``log_lr``
        (``confirmed``: a verified positive), without changing this belief: what a reading could do."""
        other = Belief(self.requirement_id, self.elsewhere_mass, dict(self.log_w), set(self.confirmed), self.values)
        other.update(key, log_lr, confirmed=confirmed)
        return other.favoured(), other.glr()

    def glr(self) -> float:
        """log p(favoured group) − log max p(alternative group), 0 unless the favoured window is confirmed."""
        fav = self.favoured()
        if fav is None or fav not in self.confirmed:
            return 0.0
        groups = self._groups()
        mine = self._group(fav)
        alt = max((v for g, v in groups.items() if g != mine), default=-math.inf)
        return max(0.0, groups[mine] - alt)

    def summary(self, top: int = 3) -> dict:
        post = self.posterior()
        best = sorted(((p, k) for k, p in post.items()), reverse=True)[:top]
        return {
            "favoured": self.favoured(),
            "glr": round(self.glr(), 3),
            "elsewhere": round(post.get(ELSEWHERE, 0.0), 4),
            "top": [[k, round(p, 4)] for p, k in best],
            "observations": self.observations,
        }


def _neg(key: str) -> tuple:
    # smaller key wins ties deterministically
    return tuple(-ord(c) for c in key)
