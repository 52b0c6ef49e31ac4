"""Chat histories exported from other apps (Telegram Desktop, ChatGPT), read as messages.

Each reader streams its file (bounded memory whatever its size) and returns an
`ImportedHistory`: messages in the saved-session shape with ids namespaced by source and
chat, the people met, and what was skipped by reason.
"""
