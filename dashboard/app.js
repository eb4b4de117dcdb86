// Marquee's dashboard: plain JavaScript over the HTTP API (docs/http.md); no build step, no CDN.
// The token stays in this tab's sessionStorage and goes in each request's Authorization header.
"use strict";
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("marquee-token") || "";
let status = null;
const screenshotURLs = {};

async function api(method, path, body, type) {
  const headers = { Authorization: "Bearer " + token };
  if (body !== undefined) headers["Content-Type"] = type || "application/json";
  const response = await fetch(path, { method, headers, body, cache: "no-store" });
  if (response.status === 401) { showLogin("the token was refused"); throw new Error("401"); }
  return response;
}

async function json(method, path, value) {
  const response = await api(method, path, value === undefined ? undefined : JSON.stringify(value));
  return { status: response.status, body: await response.json() };
}

async function command(words) {
  const { status: code, body } = await json("POST", "/api/v1/command", { command: words });
  $("command-error").textContent = code === 200 ? "" : `${words[0]}: ${body.error}${body.detail ? ": " + body.detail : ""}`;
  refresh();
}

function showLogin(message) {
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

async function login(candidate) {
  token = candidate;
  const response = await fetch("/api/v1/status", { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  if (response.status !== 200) { showLogin(response.status === 401 ? "the token was refused" : `status ${response.status}`); return; }
  sessionStorage.setItem("marquee-token", token);
  $("login").hidden = true;
  $("app").hidden = false;
  loadConfig();
  refresh();
}

async function refresh() {
  if (!token || $("app").hidden) return;
  try {
    status = (await json("GET", "/api/v1/status")).body;
    const health = status.health || { status: "?", reasons: [] };
    $("health").textContent = health.status;
    $("health").className = "badge " + health.status;
    $("reasons").replaceChildren(...health.reasons.map((r) => Object.assign(document.createElement("li"), { textContent: r })));
    const name = status.path ? status.path.split("/").pop() : "nothing";
    $("now").textContent = `${status.pause ? "Paused" : "Playing"}: ${name} (${status["playlist-pos"] + 1} of ${status["playlist-count"]})`
      + (status["time-pos"] != null ? `, ${status["time-pos"].toFixed(1)} s` : "");
    $("pause").textContent = status.pause ? "Play" : "Pause";
    $("power").textContent = status["display-power"] === "off" ? "Display on" : "Display off";
    const playlist = (await json("GET", "/api/v1/playlist")).body.data || [];
    $("playlist").replaceChildren(...playlist.map((entry) => {
      const li = document.createElement("li");
      li.textContent = entry.filename.split("/").pop() + (entry.status === "failed" ? ` (failed: ${entry.error || ""})` : "");
      if (entry.current) li.className = "current";
      return li;
    }));
    const schedule = status.schedule;
    $("schedule").textContent = schedule ? `${schedule.name}, display ${schedule.display}${schedule.next ? "; next: " + schedule.next : ""}` : "no schedule: the playlist always";
    const volume = await json("GET", "/api/v1/properties/volume");
    if (volume.status === 200 && document.activeElement !== $("volume")) $("volume").value = volume.body.data;
    $("volume").disabled = volume.status !== 200;
  } catch (e) { /* shown by the next refresh */ }
}

async function refreshScreens() {
  if (!status || $("app").hidden) return;
  for (const output of status.outputs || []) {
    let img = document.querySelector(`img[data-output="${CSS.escape(output.name)}"]`);
    if (!img) {
      img = Object.assign(document.createElement("img"), { alt: output.name });
      img.dataset.output = output.name;
      $("screens").append(img);
    }
    try {
      // As wide as it is shown (no wider than 1280 pixels): a smaller PNG costs playback less.
      const width = Math.min(1280, Math.max(160, Math.round((img.clientWidth || 640) * (window.devicePixelRatio || 1))));
      const response = await api("GET", `/api/v1/outputs/${encodeURIComponent(output.name)}/screenshot?width=${width}`);
      if (response.status !== 200) continue;
      const url = URL.createObjectURL(await response.blob());
      img.src = url;
      if (screenshotURLs[output.name]) URL.revokeObjectURL(screenshotURLs[output.name]);
      screenshotURLs[output.name] = url;
      img.dataset.updated = String(Date.now());
    } catch (e) { /* next time */ }
  }
}

async function loadConfig() {
  const response = await api("GET", "/api/v1/config");
  $("config").value = response.status === 200 ? await response.text() : "";
  $("config-result").textContent = response.status === 200 ? "" : "no config file (the embedded default plays)";
}

async function saveConfig() {
  const response = await api("PUT", "/api/v1/config", $("config").value);
  const body = await response.json();
  $("config-problems").replaceChildren(...(body.problems || []).map((p) =>
    Object.assign(document.createElement("li"), { textContent: `${p.path || "(document)"}: ${p.message}` })));
  $("config-result").textContent = response.status === 200 ? "applied" : `refused: ${body.error}`;
  refresh();
}

async function upload(event) {
  event.preventDefault();
  const file = $("upload-file").files[0];
  if (!file) return;
  $("upload-result").textContent = `uploading ${file.name}...`;
  const response = await api("PUT", `/api/v1/media/${encodeURIComponent(file.name)}`, file, "application/octet-stream");
  const body = await response.json();
  $("upload-result").textContent = response.status === 201 ? `stored ${body.name} (${body.bytes} bytes)` : `refused: ${body.error}`;
}

$("login-form").addEventListener("submit", (e) => { e.preventDefault(); login($("token").value); });
$("pause").addEventListener("click", () => command(["set_property", "pause", !(status && status.pause)]));
$("next").addEventListener("click", () => command(["playlist-next"]));
$("prev").addEventListener("click", () => command(["playlist-prev"]));
$("power").addEventListener("click", () => command(["set_property", "display-power", status && status["display-power"] === "off" ? "on" : "off"]));
$("volume").addEventListener("change", () => command(["set_property", "volume", Number($("volume").value)]));
$("upload-form").addEventListener("submit", upload);
$("config-load").addEventListener("click", loadConfig);
$("config-save").addEventListener("click", saveConfig);
setInterval(refresh, 1000);
setInterval(refreshScreens, 2000);
if (token) login(token); else showLogin();
