"""Stage: the commands that edit records, `kb new` (kb.edit.new: a skeleton entry) and `kb refresh`
(kb.edit.refresh: upstream states read from GitHub). They build on kb.records and nothing builds
on them: the checks, the site, triage and doctor never import this stage or its network client."""
