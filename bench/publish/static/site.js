// Adds a filter box above every table marked data-filter: a row stays when its text holds every
// word typed (case-insensitive). Without JavaScript the tables read whole.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table[data-filter]")) {
    const box = document.createElement("input");
    box.type = "search";
    box.className = "filter";
    box.placeholder = "filter rows (every word must match)";
    box.setAttribute("aria-label", "filter the table's rows");
    const rows = Array.from(table.tBodies[0]?.rows ?? []);
    box.addEventListener("input", () => {
      const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const row of rows) {
        const text = row.textContent.toLowerCase();
        row.hidden = !words.every((word) => text.includes(word));
      }
    });
    table.closest(".scroll").before(box);
  }
});
