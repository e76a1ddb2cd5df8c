// The event at the cursor: its name, seq, id and time, the event that caused it (`c` jumps
// there), the events it caused, its agent call, and its payload.

import { type Tape, callFigures } from "../tape";
import { el } from "../tree";
import { noun } from "./timeline";

export function renderEvent(box: HTMLElement, tape: Tape | null, position: number): void {
  box.dataset.position = String(position);
  if (!tape) {
    box.replaceChildren();
    return;
  }
  if (position === 0) {
    box.replaceChildren(el("div", "event-name", "(initial state)"), el("p", "hint", "Position 0: before the first event."));
    return;
  }
  const event = tape.events[position - 1];
  if (!event) {
    box.replaceChildren(el("div", "hint", "reading…"));
    delete box.dataset.position;
    return;
  }
  const head = el("div", "event-head");
  head.append(el("span", `event-name ${noun(event.name)}`, event.name), positionLabel(position));
  const facts = el("dl", "facts");
  facts.append(el("dt", "", "id"), el("dd", "mono", event.id), el("dt", "", "time"), el("dd", "mono", event.timestamp));
  facts.append(el("dt", "", "caused by"));
  const cause = el("dd", "mono");
  if (event.causedBy) {
    const button = el("button", "link", `${event.causedBy.slice(-12)} (c)`);
    button.dataset.cause = event.causedBy;
    button.title = `jump to ${event.causedBy}`;
    cause.append(button);
  } else cause.textContent = "—";
  facts.append(cause);
  const effects = tape.effects(event.id);
  if (effects.length > 0) {
    facts.append(el("dt", "", "caused"));
    const dd = el("dd", "effects");
    for (const seq of effects.slice(0, 30)) {
      const link = el("button", "link", `${seq + 1} ${tape.events[seq]?.name ?? ""}`);
      link.dataset.goto = String(seq + 1);
      dd.append(link);
    }
    if (effects.length > 30) dd.append(el("span", "hint", ` +${effects.length - 30}`));
    facts.append(dd);
  }
  const group = tape.groupAt(event.seq);
  if (group !== null && group >= 0) {
    const info = tape.groups.get(group);
    if (info) {
      facts.append(el("dt", "", "agent call"));
      const dd = el("dd", "");
      const link = el("button", "link", `${info.agent} from ${info.start + 1}`);
      link.dataset.goto = String(info.start + 1);
      dd.append(link);
      if (info.end !== null) {
        const end = el("button", "link", `to ${info.end + 1}`);
        end.dataset.goto = String(info.end + 1);
        dd.append(" ", end);
      }
      facts.append(dd);
      const figures = callFigures(info, null);
      if (figures) facts.append(el("dt", "", "figures"), el("dd", "mono call-figures", figures));
    }
  }
  const payload = el("pre", "payload", JSON.stringify(event.payload, null, 2));
  box.replaceChildren(head, facts, payload);
}

/** One numbering: an event is named by the position it leads to (the wire's `seq` + 1). */
function positionLabel(position: number): HTMLElement {
  const label = el("span", "event-seq", `position ${position}`);
  label.title = `the state after this event is position ${position}; on the wire this event's seq is ${position - 1}`;
  return label;
}
