"""Open an HTML report in headless Chromium with the network off, list every request the page makes, hover a
point, and save a screenshot. Not part of the tests (it needs Chromium and Playwright):

    apt-get install chromium && python -m venv /tmp/pw && /tmp/pw/bin/pip install playwright
    unshare -n /tmp/pw/bin/python bench/html_offline_check.py report.html shot.png

``unshare -n`` runs it in a network namespace with no interface but loopback: nothing could leave even if
the page asked. The check fails (exit 1) when the page requests anything but its own file or a data:/blob:
URL, or when a chart did not render.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright  # type: ignore[import-not-found]


def main() -> int:
    page_path, shot = Path(sys.argv[1]).resolve(), sys.argv[2]
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(page_path.as_uri(), wait_until="load")
        charts = page.locator(".js-plotly-plot").count()
        page.locator("th.sortable").nth(6).click()  # sort by utilization
        first = page.locator("table.sortable tbody tr").first.locator("td").nth(6).inner_text()
        point = page.locator(".js-plotly-plot .scatterlayer .trace:last-child .point").first
        point.scroll_into_view_if_needed()
        box = point.bounding_box()  # plotly's drag layer takes the pointer: move the mouse there instead
        if box:
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(500)
        hover = page.locator(".hoverlayer").first.text_content() or ""
        page.screenshot(path=shot, full_page=True)
        browser.close()
    foreign = [u for u in requests if u != page_path.as_uri() and not u.startswith(("data:", "blob:"))]
    print(f"charts rendered: {charts}")
    print(f"requests made by the page: {len(requests)}; other than the file itself: {foreign or 'none'}")
    print(f"script errors: {errors or 'none'}")
    print(f"after sorting by utilization (ascending), the first row's utilization: {first}")
    print(f"hover text of a point: {hover!r}")
    return 1 if foreign or errors or charts == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
