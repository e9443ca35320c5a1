"""Stage 4-5, site: the catalog rendered into pages and data files (kb.site.generate), put in place
by the engine or in place of the changed files (kb.site.build, kb.site.incremental), indexed for
search (kb.site.index), and served while editing (kb.site.serve)."""
