"""The backend matrix: every test that takes ``backend`` runs once per backend.

A new backend joins the whole matrix by adding its name to ``hotbin.backend.NAMES``;
backends not usable on this machine are skipped with the reason.
"""
import importlib

import numpy as np
import pytest

from hotbin import backend as registry


def _usable(name):
    try:
        registry.load(name)
        return None
    except Exception as exc:  # missing package or device: skip with the reason
        return f"{name} backend unavailable: {exc}"


_REASONS = {name: _usable(name) for name in registry.NAMES}


@pytest.fixture(params=registry.NAMES)
def backend(request):
    """A usable backend name ('cpu', 'cuda', 'wgpu'); skips the others."""
    reason = _REASONS[request.param]
    if reason:
        pytest.skip(reason)
    return request.param


@pytest.fixture
def be(backend):
    """The backend module itself (for primitive-level tests)."""
    return importlib.import_module(f"hotbin.backend.{backend}")


def to_numpy(a):
    return registry.to_host(a)


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def chromium(width=1200, height=800, console=False):
    """A headless Chromium driven by Selenium (Debian's chromium and chromium-driver), or a skip
    naming what to install; ``console``: keep the page's console log."""
    import shutil

    webdriver = pytest.importorskip("selenium.webdriver")
    chrome = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if not (chrome and driver):
        pytest.skip("no headless Chromium here (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--window-size={width},{height}", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.binary_location = chrome
    if console:
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts)
