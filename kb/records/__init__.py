"""Stage 1-3, records: an entry file loaded (kb.records.load), checked against the schema
(kb.records.schema) and the rules (kb.records.lint), and the catalog of checked entries
(kb.records.catalog: ids, URLs, facets, related titles). Nothing here renders a page or reads a
log; everything else builds on it."""
