// The operator console's one script: the CSP allows no inline handler, so behaviour is wired here.
// A control marked data-submit-on-change submits its form when its value changes (the
// playground's view picker).
document.querySelectorAll("[data-submit-on-change]").forEach((control) => {
  control.addEventListener("change", () => control.form.submit());
});
