"""The Mini App: a page in Telegram where the user sees, fixes and forgets their memory."""
