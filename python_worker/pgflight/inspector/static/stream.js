// The run page's live view of its streams (docs/streams.md): each <pre class="stream"> with a
// data-src follows it as server-sent events (/runs/RUN/stream), appending each chunk's text and
// marking a switch to another attempt; the EventSource resumes after its last event id on its own.
// Without JavaScript the page reloads every 2 s instead (a <noscript> refresh).
"use strict";
document.querySelectorAll("pre.stream[data-src]").forEach(function (pre) {
  var attempt = pre.dataset.attempt;
  var events = new EventSource(pre.dataset.src);
  events.addEventListener("chunk", function (e) {
    var c = JSON.parse(e.data);
    if (attempt && String(c.attempt_no) !== attempt) {
      pre.append("\n— attempt " + c.attempt_no + " —\n");
    }
    attempt = String(c.attempt_no);
    pre.append(c.chunk);
    pre.dataset.seq = String(c.seq);
  });
  events.addEventListener("end", function () {
    events.close();
    pre.classList.add("ended");
  });
});
