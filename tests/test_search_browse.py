"""Search and browse as a reader uses them (issue 24 item 5), in Chromium: every result behind
"Show all", a ?q= link that runs the search, a GPU model number found as written, one page
listing every failure, statuses in lifecycle order and components by their display names."""

from __future__ import annotations

from kb.records import facets, ids
from kb.records.catalog import PER_PAGE, paged_urls

from browser import search, serve
from conftest import ROOT, checked_site


def _done(page, query):
    page.wait_for_function("q => document.getElementById('kb-search').getAttribute('data-done-query') === q",
                           arg=query)


def test_show_all_lists_every_result_and_the_link_runs_the_search(live_site, page):
    site = checked_site(ROOT / "kb" / "entries")
    with serve(live_site) as base:
        page.goto(base + "about/")
        first = search(page, "CUDA error")
        assert len(first) == 10
        status = page.locator(".kb-search__status")
        total = int(status.inner_text().split()[0])
        assert total > 10
        page.locator(".kb-search__all").click()
        page.wait_for_function("() => document.querySelectorAll('.kb-search__link').length > 10")
        _done(page, "CUDA error")
        total = int(status.inner_text().split()[0])  # counted again, every result at hand
        assert total > 10 and len(page.locator(".kb-search__link").all()) == total
        assert not page.locator(".kb-search__all").count()
        shared = page.locator(".kb-search__share").get_attribute("href")
        assert shared == base + "?q=CUDA+error"
        # The link, opened elsewhere, runs the same search with every result shown.
        page.goto(shared)
        _done(page, "CUDA error")
        assert page.locator("#kb-search-input").input_value() == "CUDA error"
        assert len(page.locator(".kb-search__link").all()) == total
        hrefs = {a.get_attribute("href") for a in page.locator(".kb-search__link").all()}
        # Entry pages, and the family pages (issue 35: a family answer is searchable too).
        assert all(h.startswith(("/e/", "/families/")) for h in hrefs) and len(hrefs) == total
        assert len(site.cells) + len(site.families) >= total


def test_a_gpu_model_number_finds_the_pages_that_name_it(live_site, page):
    site = checked_site(ROOT / "kb" / "entries")
    from kb.records.catalog import string_url

    named = [c for c in site.cells if "5090" in c.entry.model_dump_json()]
    assert 0 < len(named) < len(site.cells)
    # A cell's page, or the page of another string it prints (a pointer or a disambiguation page).
    naming = {"/" + string_url(text) for text, owners in site.owners.items() if {o.id for o in owners} & {c.id for c in named}}
    with serve(live_site) as base:
        page.goto(base + "?q=5090")
        _done(page, "5090")
        found = {a.get_attribute("href") for a in page.locator(".kb-search__link").all()}
        # A family page names the GPUs its members run on; it is a right answer too.
        found = {h for h in found if not h.startswith("/families/")}
        assert found and found <= naming, sorted(found - naming)
        assert len(found) >= len(named) // 2, (len(found), len(named))


def test_every_failure_page_links_every_cell_in_id_order(live_site, page):
    """/all/ is paged like every listing: walked by its Next links, its pages list every cell once,
    at most PER_PAGE to a page, in id order, each row linking to its cell."""
    site = checked_site(ROOT / "kb" / "entries")
    citable = ids.for_entries(ROOT / "kb" / "entries")
    with serve(live_site) as base:
        page.goto(base + "by/")
        page.get_by_role("link", name="Every failure").click()
        page.wait_for_url(base + "all/")
        visited, shown, links = [], [], set()
        while True:
            visited.append(page.url)
            rows = page.locator("table.kb-all tbody tr")
            assert 0 < rows.count() <= PER_PAGE, (page.url, rows.count())
            shown += [r.locator("td").first.inner_text() for r in rows.all()]
            links |= {page.evaluate("h => new URL(h, location.href).pathname", a.get_attribute("href"))
                      for a in page.locator("table.kb-all tbody a").all()}
            following = page.locator("a.kb-pager__next")
            if not following.count():
                break
            with page.expect_navigation():
                following.first.click()
        assert visited == [base + url for url in paged_urls("all/", len(site.cells))]
        assert shown == sorted(citable.values(), key=lambda i: int(i.rsplit("-", 1)[1]))
        assert links == {"/" + site.url(c) for c in site.cells}
        page.locator("table.kb-all tbody a").first.click()
        page.wait_for_selector("#kb-id")


def test_statuses_in_lifecycle_order_and_components_by_display_name(live_site, page):
    site = checked_site(ROOT / "kb" / "entries")
    with serve(live_site) as base:
        page.goto(base + "by/status/")
        names = [a.inner_text() for a in page.locator("article a[href$='/']").all()
                 if a.inner_text() in facets.STATUS_NAMES.values()]
        present = {c.entry.status.state for c in site.cells}
        assert names == [facets.STATUS_NAMES[s] for s in facets.LIFECYCLE if s in present]
        page.goto(base + "by/component/")
        shown = [a.inner_text() for a in page.locator("article a").all()]
        wanted = sorted({facets.component_name(c.package) for cell in site.cells for c in cell.entry.components},
                        key=str.casefold)
        assert [n for n in shown if n in wanted] == wanted
        # The CUDA toolkit is browsed as CUDA: one group, named as the index names it.
        assert "CUDA" in shown and "CUDA Toolkit" not in shown and "cuda-toolkit" not in shown


def _spelling(name: str) -> str:
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def test_one_group_per_gpu_and_component_whatever_the_spelling(live_site, page):
    """By GPU and By component list each name once, however the records spell it (case, spaces,
    punctuation: 'any sm_120 build target' and 'any SM120 build target' are one group), the CUDA
    toolkit under CUDA, and the editions of one card under one family heading."""
    site = checked_site(ROOT / "kb" / "entries")
    gpus = {facets.gpu_label(g) for c in site.cells for g in c.entry.hardware.gpus}
    with serve(live_site) as base:
        for facet in ("gpu", "component"):
            page.goto(base + f"by/{facet}/")
            names = [a.inner_text() for a in page.locator("article ul.kb-groups > li > a").all()]
            assert len(names) > 5
            spelt = [_spelling(n) for n in names]
            assert len(spelt) == len(set(spelt)), sorted(n for n in names if spelt.count(_spelling(n)) > 1)
            counted = sum(int(li.inner_text().rsplit(": ", 1)[1].split()[0])
                          for li in page.locator("article ul.kb-groups > li").all())
            if facet == "gpu":
                assert {_spelling(n) for n in names} == {_spelling(g) for g in gpus}
                # each cell counted once under each of its GPU names
                assert counted == sum(len({_spelling(facets.gpu_label(g)) for g in c.entry.hardware.gpus})
                                      for c in site.cells)
                # groups are GPUs, never the record's notes about them (UX review S3-15)
                assert not [n for n in names if "(" in n or "see claims" in n or "not named in" in n], names
        page.goto(base + "by/gpu/")
        families = page.locator("article h2.kb-family").all_inner_texts()
        assert families[0] == "GB10" and families[-1] == facets.OTHER_GPUS
        assert len(families) == len(set(families))
        pro = page.locator("article h2.kb-family:text-is('RTX PRO 6000') + ul.kb-groups > li > a").all_inner_texts()
        assert pro == sorted((g for g in gpus if g.startswith("RTX PRO 6000")), key=str.casefold) and len(pro) > 1
        # the group a spelling-level duplicate used to have sends readers to the one group
        page.goto(base + "by/gpu/any-sm120-build-target-build-time-failure/")
        page.wait_for_url(base + "by/gpu/any-sm-120-build-target/")
        page.goto(base + "by/gpu/gb10-unconfirmed-report-see-claims/")
        page.wait_for_url(base + "by/gpu/gb10/")
        page.goto(base + "by/component/cuda-toolkit/")
        page.wait_for_url(base + "by/component/cuda/")


_BOX = "() => { const r = document.getElementById('kb-search-input').getBoundingClientRect(); return [r.x, r.width]; }"


def test_filter_menus_hold_every_option_and_never_move_the_box(live_site, browser):
    """The header search's filter menus are written at build time: hovering or focusing one
    moves the search input by not a pixel, and ArrowDown right after focus offers every option."""
    site = checked_site(ROOT / "kb" / "entries")
    from kb.site import search as search_data

    wanted = search_data.menus(site)
    assert wanted["status"] == [facets.STATUS_NAMES[s] for s in facets.LIFECYCLE
                                if s in {c.entry.status.state for c in site.cells}]
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    with serve(live_site) as base:
        for url in ("", "about/", site.url(site.cells[0])):
            page.goto(base + url)
            page.wait_for_load_state("load")
            start = page.evaluate(_BOX)
            for name in ("component", "architecture", "status"):
                menu = page.locator(f"#kb-search select[data-filter={name}]")
                menu.hover()
                assert page.evaluate(_BOX) == start, (url, name, "hover")
                menu.focus()
                shown = menu.evaluate("s => Array.from(s.options, o => o.value)")
                assert shown == [""] + wanted[name], (url, name)
                page.keyboard.press("ArrowDown")
                assert menu.input_value() == wanted[name][0], (url, name)
                assert page.evaluate(_BOX) == start, (url, name, "focus")
                menu.select_option("")
    context.close()


def test_result_literals_are_readable_ids_and_dates_stay_on_one_line_and_the_file_input_shows_focus(live_site, page):
    """Issue 37 item 7: the literal a reader scans is at least the title's size (it was 10 px), an
    id or date in /all/ never wraps (at 390 px either), and the triage file input shows a ring."""
    with serve(live_site) as base:
        page.goto(base + "about/")
        search(page, "sm_120")
        sizes = page.evaluate("""() => ['.kb-search__link', '.kb-search__cell'].map(s =>
            parseFloat(getComputedStyle(document.querySelector(s)).fontSize))""")
        assert sizes[0] >= 14 and sizes[0] >= sizes[1], sizes
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(base + "all/")
        lines = page.evaluate("""() => [...document.querySelectorAll('td.kb-all__id, td.kb-all__date')].slice(0, 20)
            .map(td => { const r = document.createRange(); r.selectNodeContents(td);
                         return new Set([...r.getClientRects()].map(x => Math.round(x.bottom))).size; })""")
        assert lines and max(lines) == 1, lines  # the text's boxes all end on one line
        page.goto(base + "triage/")
        page.focus("#kb-triage-file")
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        ring = page.evaluate("() => getComputedStyle(document.getElementById('kb-triage-file')).outlineStyle")
        assert ring not in ("none", "auto"), ring


def _all_pages(site) -> list[list]:
    """The cells of each /all/ page, in id order."""
    cells = sorted(site.cells, key=lambda c: ids.number(site.citable[c.id]))
    assert len(cells) > PER_PAGE, "the index fits one /all/ page: these tests need two"
    return [cells[n:n + PER_PAGE] for n in range(0, len(cells), PER_PAGE)]


def _count_reads(page, text: str):
    page.wait_for_function("t => document.querySelector('.kb-all__shown').textContent === t", arg=text)


def _visible_rows(page) -> list[tuple[str, str]]:
    """(id, title) of each row shown, top to bottom."""
    return [(r.locator("td").first.inner_text(), r.locator("td > a").inner_text())
            for r in page.locator("table.kb-all tbody tr:visible").all()]


def _rows(site, cells) -> list[tuple[str, str]]:
    return [(site.citable[c.id], c.entry.title) for c in cells]


def test_every_failure_page_filters_by_status_component_and_date(live_site, page):
    """/all/ (UX review S2-12): the filters show only the rows of every page with the chosen status,
    component and update month, in id order, counted against every failure (kb-all.js); nothing is
    fetched before a filter is chosen, and clearing them gives back the page's own rows. Without
    JavaScript the form stays hidden and the page is the plain paged list."""
    site = checked_site(ROOT / "kb" / "entries")
    from kb.records.state import state

    pages = _all_pages(site)
    every = [c for chunk in pages for c in chunk]
    total = len(every)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    with serve(live_site) as base:
        others = {base + url for url in paged_urls("all/", total)[1:]}
        page.goto(base + "all/")
        form = page.locator("form.kb-all__filter")
        assert form.is_visible()
        assert page.locator(".kb-all__shown").inner_text() == f"{PER_PAGE} of {total} failures shown"
        assert not others & set(asked), "pages fetched before any filter was chosen"
        # The choices cover every failure, not only this page's rows.
        months = form.locator("select[data-filter=updated] option").all_inner_texts()[1:]
        assert months == [f"in or after {m}" for m in sorted({str(c.entry.updated)[:7] for c in every}, reverse=True)]
        components = form.locator("select[data-filter=components] option").all_inner_texts()[1:]
        assert components == sorted({facets.component_name(p.package) for c in every for p in c.entry.components},
                                    key=str.casefold)
        status = "fixed-release"
        want = [c for c in every if state(c.entry).key == status]
        assert 0 < len(want) < total
        form.locator("select[data-filter=status]").select_option(status)
        _count_reads(page, f"{len(want)} of {total} failures shown")
        assert _visible_rows(page) == _rows(site, want)
        assert others <= set(asked)
        form.locator("select[data-filter=components]").select_option("FlashInfer")
        both = [c for c in want if "FlashInfer" in {facets.component_name(p.package) for p in c.entry.components}]
        _count_reads(page, f"{len(both)} of {total} failures shown")
        assert _visible_rows(page) == _rows(site, both)
        form.locator("select[data-filter=status]").select_option("")
        form.locator("select[data-filter=components]").select_option("")
        _count_reads(page, f"{PER_PAGE} of {total} failures shown")  # this page's own rows again
        assert page.locator("table.kb-all tbody tr").count() == PER_PAGE
        assert _visible_rows(page) == _rows(site, pages[0])
        newest = max(str(c.entry.updated)[:7] for c in every)
        form.locator("select[data-filter=updated]").select_option(newest)
        recent = [c for c in every if str(c.entry.updated) >= newest]
        assert 0 < len(recent)
        # Every failure may be that recent: then the line counts them all, as with no filter on one page.
        _count_reads(page, f"{total} failures" if len(recent) == total else f"{len(recent)} of {total} failures shown")
        assert _visible_rows(page) == _rows(site, recent)
    # Without JavaScript: the plain paged list, no filter form.
    context = page.context.browser.new_context(java_script_enabled=False)
    plain = context.new_page()
    with serve(live_site) as base:
        plain.goto(base + "all/")
        assert not plain.locator("form.kb-all__filter").is_visible()
        assert plain.locator("table.kb-all tbody tr:visible").count() == PER_PAGE
        assert plain.locator("a.kb-pager__next").count()
    context.close()


def test_a_filter_on_a_later_every_failure_page_finds_failures_of_the_first(live_site, page):
    """On /all/2/ (served under a sub-path, as on GitHub Pages) a filter finds the matches of page 1
    too, above this page's in id order, and their links lead to their cells (resolved against page 1,
    not this page)."""
    site = checked_site(ROOT / "kb" / "entries")
    from kb.records.state import state

    pages = _all_pages(site)
    every = [c for chunk in pages for c in chunk]
    # A status both pages hold, so the answer needs both.
    held = [{state(c.entry).key for c in chunk} for chunk in pages[:2]]
    status = next(key for key in facets.LIFECYCLE if key in held[0] and key in held[1])
    want = [c for c in every if state(c.entry).key == status]
    with serve(live_site, prefix="/kb/") as base:
        page.goto(base + "all/2/")
        page.locator("form.kb-all__filter select[data-filter=status]").select_option(status)
        _count_reads(page, f"{len(want)} of {len(every)} failures shown")
        assert _visible_rows(page) == _rows(site, want)
        earlier = page.locator("table.kb-all tbody tr:visible td > a").first
        assert earlier.inner_text() == want[0].entry.title and want[0] in pages[0]
        page.locator("form.kb-all__filter select[data-filter=status]").select_option("")
        _count_reads(page, f"{len(pages[1])} of {len(every)} failures shown")
        assert _visible_rows(page) == _rows(site, pages[1])
        page.locator("form.kb-all__filter select[data-filter=status]").select_option(status)
        _count_reads(page, f"{len(want)} of {len(every)} failures shown")
        with page.expect_navigation():
            earlier.click()
        assert page.url == base + site.url(want[0])
        page.wait_for_selector("#kb-id")


def test_a_page_that_cannot_be_fetched_is_named_in_the_count(live_site, page):
    """A filter on /all/ whose page 2 answers 404 says so and filters this page only, never fewer
    rows without a word."""
    site = checked_site(ROOT / "kb" / "entries")
    from kb.records.state import state

    pages = _all_pages(site)
    status = "fixed-release"
    mine = [c for c in pages[0] if state(c.entry).key == status]
    assert mine
    with serve(live_site) as base:
        page.route(base + "all/2/", lambda route: route.fulfill(status=404, body="Not Found"))
        page.goto(base + "all/")
        page.locator("form.kb-all__filter select[data-filter=status]").select_option(status)
        _count_reads(page, "could not load page 2: showing this page only; "
                     f"{len(mine)} of {len(pages[0])} failures shown")
        assert _visible_rows(page) == _rows(site, mine)


def test_search_results_show_each_failures_status(live_site, page):
    """UX review S3-14: a result for a failure's page says its status, in the badge's words."""
    with serve(live_site) as base:
        page.goto(base + "about/")
        search(page, "CUDA error")
        states = page.locator("#kb-search-results li .kb-search__state").all_inner_texts()
        assert states and all(s.removeprefix("Status: ") in facets.STATUS_NAMES.values() for s in states), states


def test_the_count_stays_the_same_after_show_all_and_no_page_is_listed_twice(live_site, page):
    # A page can be both a literal-string hit and a Pagefind hit beyond the first ten (whose data
    # is not loaded): counted once before "Show all" as after (issue 37 item 7).
    with serve(live_site) as base:
        page.goto(base + "about/")
        checked = 0
        for query in ("sm_120", "CUDA error", "Blackwell", "illegal memory access", "FlashInfer"):
            search(page, query)
            status = page.locator(".kb-search__status")
            if not page.locator(".kb-search__all").count():
                continue
            before = int(status.inner_text().split()[0])
            page.locator(".kb-search__all").click()
            page.wait_for_function("() => document.querySelectorAll('.kb-search__link').length > 10")
            _done(page, query)
            hrefs = [a.get_attribute("href") for a in page.locator(".kb-search__link").all()]
            after = int(status.inner_text().split()[0])
            assert len(hrefs) == len(set(hrefs)) == after, query
            assert before == after, (query, before, after)
            checked += 1
        assert checked >= 3


def test_a_query_naming_a_gpu_outside_the_index_says_so_above_the_results(live_site, page):
    # The sentence of My stack, triage and `kb match` (kb.records.verdict.out_of_scope, on the GPU
    # table kb.records.gpus.MODELS), in the header search box too (issue 37 item 6).
    from kb.records import gpus, verdict

    def expected(name):
        words = verdict.out_of_scope([{"name": name, "compute_capability": gpus.model_capability(name)}])
        return words[0].upper() + words[1:] + "."

    with serve(live_site) as base:
        page.goto(base + "about/")
        note = page.locator(".kb-search__scope")
        for query, name, arch in (("H100", "H100", "sm_90"), ("RTX 4090 illegal memory access", "RTX 4090", "sm_89"),
                                  ("b200", "b200", "sm_100")):
            search(page, query)
            assert note.inner_text() == expected(name), query
            assert f"your GPU is {name} ({arch})" in note.inner_text() and "covers sm_120/sm_121;" in note.inner_text()
            status = page.locator(".kb-search__status")
            assert note.bounding_box()["y"] < status.bounding_box()["y"]  # above the count and the results
        for query in ("RTX 5090", "4090 and 5090", "CUDA error"):  # a GPU the index covers, or none named
            search(page, query)
            assert not note.inner_text() and not note.is_visible(), query
        search(page, "H100")
        page.locator("#kb-search-input").press("Escape")
        assert not note.inner_text()
