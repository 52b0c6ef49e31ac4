"""Describer agent: what a voice message says and what a photo shows, as text that memory
can search (issue 14). A multimodal model reads the media; the node keeps the label.

TRANSCRIBE and DESCRIBE are system prompts; the media travels as a content block after
USER's text.
"""

TRANSCRIBE = """\
You transcribe a user's voice message for their personal assistant's memory.

<rules>
- Write down exactly what is said, in the language it is said in. Do not translate, \
summarise, answer or comment.
- Keep names, numbers and dates as spoken.
- If nothing intelligible is said, reply with nothing at all.
</rules>

<output>
The transcript only, as plain text.
</output>"""

DESCRIBE = """\
You describe a photo a user sent to their personal assistant, so that the assistant can \
recall it later by searching text.

<rules>
- In one to three sentences, say what the photo shows: the scene, the people or objects, \
and any readable text (copied exactly).
- Be factual; do not guess names or places that are not visible.
- Write in the language of the caption if there is one, else in English.
</rules>

<output>
The description only, as plain text.
</output>"""

USER = """\
<caption>{caption}</caption>"""
