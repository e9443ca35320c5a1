"""Stage: refresh, `kb refresh` (kb.edit.refresh.command): read the live state of each upstream issue and pull request from GitHub's REST API,
print what differs from the records and, with `--write`, record it (`kb refresh`).

What is read, for the `upstream[]` links of kind issue and pr (commit, release and doc links do
not change state and are not read):

- an issue: `GET /repos/{owner}/{repo}/issues/{n}`: `state` (open, closed) and `closed_at`;
- a pull request: `GET /repos/{owner}/{repo}/pulls/{n}`: `state`, `merged_at` (merged when set),
  `closed_at` and `merge_commit_sha`;
- a pull request that is merged upstream but not in the record: the first final release whose
  tag contains the merge commit, to print beside the new state. `GET .../releases` (the newest
  RELEASES_PAGE releases, once per repository and run) gives the candidates: published after the
  merge, no drafts, no pre-releases (GitHub's flag, or a PEP 440 pre- or dev-release tag), oldest
  published first. Each is tried in turn with `GET .../compare/{tag}...{merge_commit_sha}`, whose
  `status` is "behind" or "identical" when the tag contains the commit; at most MAX_COMPARES are
  tried. The compare asks for `per_page=1&page=2`: GitHub sends the list of changed files only with
  page 1, so the answer stays small however far apart the two commits are.

What is checked, for each component with `fixed_by` (a pull request) and `fixed_in` (a version):
that `fixed_in` is the first release containing the fix. The pull request must be merged, and
(a) a tag for the version must exist in the pull request's repository, spelled `v0.6.18` or
`0.6.18` for version 0.6.18 (and first `sgl-kernel-v0.3.1` or `sgl-kernel-0.3.1` for a package not
named like its repository, sgl-kernel in sgl-project/sglang): a release in the same listing (any
non-draft release whose tag reads as that version), else `GET .../git/ref/tags/{tag}` for each
spelling in turn, a 404 meaning no such tag; (b) that tag must contain the merge commit (the
compare above); (c) the final release before it must not: the final releases of the listing in the
same spelling (no drafts, no pre-releases, no local versions), ordered by version, are walked down
from the one before `fixed_in` while they contain the commit, to name the first that does. When
(b) fails the walk goes up instead, to name the first release that contains it. A mismatch is
printed as a difference (`cell: components[0].fixed_in 0.6.18.post1: the first release containing
<PR> is v0.6.18`); `--write` never changes `fixed_in`, a person decides. The walk sees only the
listing: a previous release that is a tag without a GitHub release, or older than the
RELEASES_PAGE newest releases, is not compared, and a history of branches is read as if linear.

Request budget: one request per distinct issue or pull-request URL (a URL that several cells
link is read once), plus, for each pull request newly merged, one releases listing per repository
and at most MAX_COMPARES compares; plus, for each distinct (fixed_by, fixed_in, package), the pull
request when no link reads it, the releases listing (shared, once per repository), at most two
`git/ref` lookups per spelling series tried (only when the listing lacks the version; so two, or
four for a package not named like its repository) and at most MAX_COMPARES compares. No URL is
requested twice in a run; never more than `--max-requests` in all. Nothing is retried.

Every request has a wall-clock deadline (`--timeout`, connection to last byte: each read of the
socket may take only the time left, so a server that trickles its headers or body cannot stretch
it) and carries an ETag from the last answer to the same URL
(`If-None-Match`): a 304 reuses the stored answer, and does not count against GitHub's rate limit.
The ETags live in `.cache/kb/github-etags.json` (JSON, safe to delete) with the few fields read
of each answer, dropped after CACHE_DAYS days unused; a stored answer goes through the same
checks as a fresh one. When `x-ratelimit-remaining` reaches 0 no further request
is sent, and a 403 or 429 that is a rate limit stops the run with the time it resets. A redirect
is never followed (the token would go with it): a moved issue is reported like a missing one.

Answers are not trusted: at most MAX_BODY bytes, JSON of the documented shape, states from the
documented vocabulary, timestamps that are real dates, tag names that are plain refnames. What is
written is chosen here (one of the schema's link states, today's date), never copied.

Exit status: 0 when every state read matches its record and every fixed_in checked is right, 1
when some differ (with `--write`: the states were written, fixed_in never is), 2 on any error, in
which case nothing is written. With `--write`, each link read gets `as_of` = today (the day its
state was read) and its `state` when it differs; nothing else in the file changes, comments and
layout included (a ruamel.yaml round trip, checked line by line), and each file is replaced
atomically.

Modules, in the order a run uses them: records (read the entries), client (the network client),
answers (check what GitHub sent), reader (the links' live state and the releases), rewrite
(write the changes), command (the command line and the exit status).
"""
