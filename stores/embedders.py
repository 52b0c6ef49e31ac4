"""Sentence embedders: the local multilingual Universal Sentence Encoder, or a remote model.

Both are LangChain `Embeddings`, created on first use; `Embedder` wraps one and hands out
L2-normalised float32 matrices, which is what the vector store and the non-LLM
segmentation want. Every text is encoded once: recent texts' vectors are kept (a turn's
message is embedded when it is stored, and its search reuses that vector), and
concurrent callers share model calls (`EncodeBatcher`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from core.settings import EmbeddingsProvider, Settings
from core.tuning import BUNDLED_EMBEDDER

if TYPE_CHECKING:  # numpy loads with the first text embedded: `topica topics` embeds none
    import numpy as np
    from langchain_core.embeddings import Embeddings

MAX_EMBEDDED_CHARS = 30_000
"""Longer texts are embedded by their first 30K characters: a topic is at most 25K
(split_threshold_chars) plus its summary, and the local encoder's pure-Python
tokenizer's time grows with the length of the text."""

CACHE_SIZE = 4096
"""Vectors of recent texts kept (about 8 MB): a turn scores the passages of its recalled
long messages (`nodes.response.ranking.passages`), and the next turn usually recalls them again."""

CACHED_CHARS = 4_000
"""Texts up to this long are kept: messages and queries, which come back within a turn,
not whole topics, which do not."""


class _Request:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.rows: list[list[float]] = []
        self.error: BaseException | None = None
        self.lead = False
        self.done = threading.Event()


class EncodeBatcher:
    """Concurrent callers share model calls.

    A caller that finds the model idle encodes its texts at once; callers that arrive while
    it is busy queue up, and when it is done the first of them encodes everything queued in
    one batch. Nobody waits for a timer: a lone turn is encoded immediately, and under load
    the batches grow by themselves (50 concurrent turns: a few model calls, not 50).
    """

    def __init__(self, embed: Callable[[list[str]], list[list[float]]], batch_size: int) -> None:
        self._embed = embed
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._queue: list[_Request] = []
        self._busy = False
        self.calls = 0
        """Model calls made (each of at most `batch_size` texts)."""

    def waiting(self) -> int:
        """Callers queued behind the one encoding now."""
        with self._lock:
            return len(self._queue)

    def encode(self, texts: list[str]) -> list[list[float]]:
        request = _Request(texts)
        with self._lock:
            self._queue.append(request)
            request.lead = not self._busy
            self._busy = True
        if not request.lead:
            request.done.wait()
        if request.lead:  # idle on arrival, or handed the queue by the caller before
            self._drain()
        if request.error is not None:
            raise request.error
        return request.rows

    def _drain(self) -> None:
        with self._lock:
            batch, self._queue = self._queue, []
        try:
            texts = [text for request in batch for text in request.texts]
            rows: list[list[float]] = []
            for start in range(0, len(texts), self._batch_size):
                self.calls += 1
                rows.extend(self._embed(texts[start : start + self._batch_size]))
            for request in batch:
                request.rows, rows = rows[: len(request.texts)], rows[len(request.texts) :]
        except BaseException as error:
            for request in batch:
                request.error = error
        with self._lock:
            if self._queue:
                self._queue[0].lead = True
                self._queue[0].done.set()
            else:
                self._busy = False
        for request in batch:
            request.done.set()


class Embedder:
    """Texts through an `Embeddings` model into unit vectors, each text once."""

    def __init__(
        self,
        model: Embeddings | Callable[[], Embeddings],
        name: str,
        batch_size: int = 64,
    ) -> None:
        """`model` is the model, or a function that makes it when a text is first embedded."""
        self._model: Embeddings | None = None if callable(model) else model
        self._make = model if callable(model) else None
        self.name = name
        self.batch_size = batch_size
        self._model_lock = threading.Lock()
        self.batcher = EncodeBatcher(self._embed, batch_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def model(self) -> Embeddings:
        with self._model_lock:
            if self._model is None:
                assert self._make is not None
                self._model = self._make()
            return self._model

    def load(self) -> None:
        """Create the model now; a local one also loads its weights (about half a second
        from prepared files), so the first text embedded does not wait for them. A remote
        model is only a client: nothing is sent."""
        load = getattr(self.model, "load", None)
        if callable(load):
            load()

    def _embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed_documents(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length rows, one per text (an empty text embeds as a space)."""
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prepared = [text[:MAX_EMBEDDED_CHARS] if text.strip() else " " for text in texts]
        found: dict[str, np.ndarray] = {}
        with self._cache_lock:
            for text in prepared:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(text for text in prepared if text not in found))
        if missing:
            encoded = normalise(np.asarray(self.batcher.encode(missing), dtype=np.float32))
            encoded.setflags(write=False)
            found.update(zip(missing, encoded, strict=True))
            with self._cache_lock:
                for text, vector in zip(missing, encoded, strict=True):
                    if len(text) <= CACHED_CHARS:
                        self._cache[text] = vector
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return np.stack([found[text] for text in prepared])

    def encode_query(self, text: str) -> np.ndarray:
        """One query vector (read-only); a text embedded recently is not embedded again."""
        vector = self.encode([text])[0]
        vector.setflags(write=False)
        return vector


def normalise(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def local_encoder(cache_dir: Path | None = None) -> Embeddings:
    from stores.sentence_encoder import UniversalSentenceEncoderEmbeddings

    return UniversalSentenceEncoderEmbeddings(cache_dir=cache_dir)


def build_embedder(settings: Settings) -> Embedder:
    if settings.embeddings_provider is EmbeddingsProvider.LOCAL:
        return Embedder(partial(local_encoder, settings.cache_dir), name=BUNDLED_EMBEDDER)

    def remote() -> Embeddings:
        from langchain_openai import OpenAIEmbeddings

        api_key = settings.embeddings_api_key or settings.llm_api_key
        return OpenAIEmbeddings(
            model=settings.embeddings_model,
            base_url=settings.embeddings_base_url or settings.llm_base_url,
            api_key=api_key.get_secret_value() if api_key else "not-needed",
            check_embedding_ctx_length=False,
        )

    return Embedder(remote, name=settings.embeddings_model)
