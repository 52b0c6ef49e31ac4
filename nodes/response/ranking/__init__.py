"""The ranking of a turn's recall, as pure functions of ids, rows and one `Ranking`.

Used alike by the search (`order_topics`: candidates by their best message), the context's
assembly (`fill_budget`: what of the recalled topics fits), the memory-only answer
(`rank_members`) and the evaluation harness (`rank_items`). Nothing here reads a store or
calls a model: the callers read the rows and hand in a `Recall` (the turn's queries and
the search's evidence) and a `Ranking` (the embedder's calibration profile).
"""
