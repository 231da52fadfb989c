"""Debian's headless Chromium through selenium and Debian's chromedriver (no browser downloads),
shared by the browser suites."""
from __future__ import annotations

import pathlib
import shutil

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def chromium(directory: pathlib.Path, console: bool = False) -> webdriver.Chrome:
    """A new headless Chromium with its own profile under `directory` (one browser context per
    call). With `console`, the page's console is kept for `driver.get_log("browser")`."""
    directory.mkdir(parents=True, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--no-proxy-server", "--disable-extensions",
                     "--force-device-scale-factor=1", f"--user-data-dir={directory / 'profile'}"):
        options.add_argument(argument)
    if console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(directory / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(30)
    return driver
