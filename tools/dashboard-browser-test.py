#!/usr/bin/python3
"""Walks Marquee's web dashboard in headless Chromium (Selenium, chromedriver; Debian's
python3-selenium, chromium, chromium-driver) on a phone-sized window, and checks through the API
what the player did.

Usage: dashboard-browser-test.py BASE_URL CONTROL_TOKEN CLIP_TO_UPLOAD
Exit status 0 when every step passed; 1 with the failed step named. Each wait is bounded.
"""
import json
import os
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

base, token, clip = sys.argv[1:4]


def api(path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def until(what, condition, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                print("ok:", what, flush=True)
                return
        except Exception:  # an element not there yet, a request refused: try again
            pass
        time.sleep(0.2)
    raise SystemExit("failed: " + what)


# The screenshot as the page shows it, hashed in the page (FNV-1a over its pixels drawn on a
# canvas: the page's Content-Security-Policy lets it draw the blob, not fetch it again).
IMAGE_HASH = """
const done = arguments[arguments.length - 1];
const img = document.querySelector('img[data-output]');
if (!img || !img.complete || img.naturalWidth === 0) { done(null); return; }
const canvas = document.createElement('canvas');
canvas.width = 160; canvas.height = 90;
const context = canvas.getContext('2d');
context.drawImage(img, 0, 0, 160, 90);
const a = context.getImageData(0, 0, 160, 90).data;
let h = 2166136261;
for (let i = 0; i < a.length; i++) { h ^= a[i]; h = Math.imul(h, 16777619) >>> 0; }
done(img.naturalWidth + 'x' + img.naturalHeight + ':' + h);
"""

options = Options()
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=412,915"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
driver.set_page_load_timeout(30)
driver.set_script_timeout(10)
by_id = lambda name: driver.find_element(By.ID, name)
try:
    driver.get(base + "/")
    by_id("token").send_keys("not-the-token")
    by_id("login-button").click()
    until("a wrong token is refused", lambda: "refused" in by_id("login-error").text and not by_id("app").is_displayed())
    by_id("token").clear()
    by_id("token").send_keys(token)
    by_id("login-button").click()
    until("logged in", lambda: by_id("app").is_displayed() and by_id("health").text not in ("", "?"))

    first = []
    until("a screenshot shows", lambda: first.append(driver.execute_async_script(IMAGE_HASH)) or first[-1] is not None)
    until("the screenshot changes", lambda: driver.execute_async_script(IMAGE_HASH) not in (None, first[-1]))

    by_id("pause").click()
    until("pause pauses the player", lambda: api("/api/v1/properties/pause")["data"] is True and by_id("pause").text == "Play")
    by_id("pause").click()
    until("play resumes it", lambda: api("/api/v1/properties/pause")["data"] is False and by_id("pause").text == "Pause")

    by_id("upload-file").send_keys(os.path.abspath(clip))
    by_id("upload-button").click()
    name = os.path.basename(clip)
    until("the upload is stored", lambda: by_id("upload-result").text.startswith("stored " + name))
    until("the uploaded clip plays", lambda: api("/api/v1/properties/filename")["data"] == name, timeout=20)
    until("the playlist shows it", lambda: name in by_id("playlist").text)

    driver.execute_script("document.getElementById('config').value = arguments[0]",
                          '{"playlist": [{"uri": "a.mp4", "start": -1}]}')
    by_id("config-save").click()
    until("a broken config is refused with its JSON path",
          lambda: "playlist[0].start" in by_id("config-problems").text and by_id("config-result").text.startswith("refused"))
    t0 = api("/api/v1/properties/time-pos")["data"]
    until("the old config keeps playing", lambda: api("/api/v1/properties/time-pos")["data"] != t0
          and api("/api/v1/properties/playlist-count")["data"] == 2)
    print("all steps passed", flush=True)
finally:
    driver.quit()
