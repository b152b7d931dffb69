// One modal confirmation for every control: a <dialog> (Esc cancels, focus stays inside).

const dialog = document.getElementById("confirm");
const title = document.getElementById("confirm-title");
const text = document.getElementById("confirm-text");
const ok = document.getElementById("confirm-ok");
const cancel = document.getElementById("confirm-cancel");

/** Ask before acting: resolves true when the person confirms. Cancel has the focus. */
export function confirmAction(question, detail, action) {
  title.textContent = question;
  text.textContent = detail;
  ok.textContent = action;
  return new Promise((resolve) => {
    const done = (answer) => {
      ok.removeEventListener("click", yes);
      cancel.removeEventListener("click", no);
      dialog.removeEventListener("cancel", no);
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const yes = () => done(true);
    const no = (event) => {
      event.preventDefault();
      done(false);
    };
    ok.addEventListener("click", yes);
    cancel.addEventListener("click", no);
    dialog.addEventListener("cancel", no);
    dialog.showModal();
    cancel.focus();
  });
}
