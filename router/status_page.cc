#include "router/status_page.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kvmesh::router {

std::string StatusJson(const StatusSource& source) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["router"] = {
      {"id", source.router_id}, {"policy", source.policy}, {"draining", source.draining}};
  const auto hits = source.log->Hits();
  ordered_json workers = ordered_json::array();
  for (const auto& w : source.registry->AllConnections()) {
    const v1::LoadResponse load = w->load();
    const bool has_info = w->has_info();
    const v1::InfoResponse info = has_info ? w->info() : v1::InfoResponse();
    ordered_json entry;
    entry["id"] = w->worker_id();
    entry["address"] = w->address();
    entry["model"] = info.model_name();
    entry["healthy"] = w->healthy();
    entry["running"] = load.running();
    entry["waiting"] = load.waiting();
    entry["inflight"] = w->inflight.load();
    entry["kv"] = {{"total", load.kv_blocks_total()},
                   {"used", load.kv_blocks_used()},
                   {"cached", load.kv_blocks_cached()},
                   {"free", load.kv_blocks_free()}};
    entry["kv_tier"] = load.kv_host_blocks_total() > 0 ? "device+host" : "device";
    entry["kv_host"] = {{"total", load.kv_host_blocks_total()},
                        {"held", load.kv_host_blocks()},
                        {"restore_tokens_per_s", load.host_restore_tokens_per_s()}};
    entry["kv_type"] = info.kv_type();
    entry["split"] = info.split();
    std::string devices;
    for (const v1::DeviceInfo& d : info.devices())
      devices += (devices.empty() ? "" : ",") + d.name();
    entry["devices"] = devices;
    auto it = hits.find(w->worker_id());
    if (it != hits.end() && it->second.prompt_tokens > 0) {
      entry["hit_rate"] = static_cast<double>(it->second.cached_tokens) /
                          static_cast<double>(it->second.prompt_tokens);
      entry["requests"] = it->second.requests;
    } else {
      entry["hit_rate"] = nullptr;
      entry["requests"] = 0;
    }
    workers.push_back(std::move(entry));
  }
  std::sort(workers.begin(), workers.end(), [](const ordered_json& a, const ordered_json& b) {
    return a["id"].get<std::string>() < b["id"].get<std::string>();
  });
  out["workers"] = std::move(workers);
  ordered_json decisions = ordered_json::array();
  for (const RoutedRequest& r : source.log->Recent()) {
    decisions.push_back(
        {{"unix_ms", r.unix_ms},
         {"request_id", r.request_id},
         {"model", r.model},
         {"worker", r.worker},
         {"policy", r.policy},
         {"reason", r.reason},
         {"prompt_tokens", r.prompt_tokens},
         {"predicted_cached", r.predicted_cached},
         {"reported_cached",
          r.reported_cached < 0 ? ordered_json(nullptr) : ordered_json(r.reported_cached)}});
  }
  out["decisions"] = std::move(decisions);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view StatusHtml() {
  return R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kvmesh router status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
  #meta { color: #5b6475; }
  table { border-collapse: collapse; width: 100%; background: #fff; box-shadow: 0 1px 2px #0002; }
  th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #e5e8ee; white-space: nowrap; }
  th { background: #eef1f6; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .ok { color: #16794c; font-weight: 600; } .down { color: #b42318; font-weight: 600; }
  .bar { display: inline-flex; width: 160px; height: 10px; background: #e5e8ee; border-radius: 3px; overflow: hidden; vertical-align: middle; margin-right: .5em; }
  .bar span { display: block; height: 100%; } .used { background: #d9534f; } .cached { background: #3b82f6; }
  #error { color: #b42318; }
</style>
</head>
<body>
<h1>kvmesh router</h1>
<div id="meta">loading…</div>
<div id="error"></div>
<h2>Workers</h2>
<table id="workers"><thead><tr>
  <th>worker</th><th>address</th><th>model</th><th>health</th><th>running</th><th>waiting</th>
  <th>in flight</th><th>KV blocks (device tier): used / cached / total</th><th>host tier: held / total</th><th>prefix hit rate</th><th>devices</th>
</tr></thead><tbody></tbody></table>
<h2>Recent routing decisions</h2>
<table id="decisions"><thead><tr>
  <th>time</th><th>request</th><th>model</th><th>worker</th><th>policy</th><th>reason</th>
  <th>prompt tokens</th><th>predicted cached</th><th>reported cached</th>
</tr></thead><tbody></tbody></table>
<script>
"use strict";
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
function kvCell(row, kv) {
  const td = cell(row, "");
  const bar = document.createElement("span");
  bar.className = "bar";
  for (const [part, cls] of [[kv.used, "used"], [kv.cached, "cached"]]) {
    const s = document.createElement("span");
    s.className = cls;
    s.style.width = (kv.total > 0 ? (100 * part / kv.total) : 0) + "%";
    bar.appendChild(s);
  }
  td.appendChild(bar);
  td.appendChild(document.createTextNode(kv.used + " / " + kv.cached + " / " + kv.total));
}
function render(s) {
  document.getElementById("meta").textContent = "router " + s.router.id + " · policy " + s.router.policy +
    (s.router.draining ? " · DRAINING" : "") + " · " + s.workers.length + " workers · updated " +
    new Date().toLocaleTimeString();
  const wb = document.querySelector("#workers tbody");
  wb.replaceChildren();
  for (const w of s.workers) {
    const row = document.createElement("tr");
    row.dataset.worker = w.id;
    cell(row, w.id); cell(row, w.address); cell(row, w.model || "?");
    cell(row, w.healthy ? "healthy" : "down", w.healthy ? "ok" : "down");
    cell(row, w.running, "num"); cell(row, w.waiting, "num"); cell(row, w.inflight, "num");
    kvCell(row, w.kv);
    cell(row, w.kv_host.total > 0 ? w.kv_host.held + " / " + w.kv_host.total : "none");
    cell(row, w.hit_rate === null ? "–" : (100 * w.hit_rate).toFixed(1) + "% of " + w.requests + " req", "num");
    cell(row, (w.devices || "") + (w.split && w.split !== "none" ? " (" + w.split + ")" : ""));
    wb.appendChild(row);
  }
  const db = document.querySelector("#decisions tbody");
  db.replaceChildren();
  for (const d of s.decisions) {
    const row = document.createElement("tr");
    row.dataset.reason = d.reason;
    cell(row, new Date(d.unix_ms).toLocaleTimeString()); cell(row, d.request_id); cell(row, d.model);
    cell(row, d.worker); cell(row, d.policy); cell(row, d.reason);
    cell(row, d.prompt_tokens, "num"); cell(row, d.predicted_cached, "num");
    cell(row, d.reported_cached === null ? "…" : d.reported_cached, "num");
    db.appendChild(row);
  }
}
async function refresh() {
  try {
    const res = await fetch("status.json", {cache: "no-store"});
    if (!res.ok) throw new Error("status.json: HTTP " + res.status);
    render(await res.json());
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = String(e);
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)HTML";
}

}  // namespace kvmesh::router
