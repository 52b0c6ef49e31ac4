"""The default bounds of reading one document, written once for the settings and the
reader (plain numbers: importing this costs a document worker nothing)."""

DOCUMENT_READ_CPU_S = 10.0
DOCUMENT_READ_MEMORY_MB = 1024
DOCUMENT_READ_TIMEOUT_S = 20.0
DOCUMENT_MAX_PAGES = 1000
DOCUMENT_MAX_DECOMPRESSED_BYTES = 50 * 1024 * 1024
MAX_DOCUMENT_CHARS = 100_000
