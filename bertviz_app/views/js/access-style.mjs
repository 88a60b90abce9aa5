// The views' CSS for the text alternative (describe.mjs), the focus ring and the colour-blind theme, apart from
// style.mjs so that docs/accessibility.md can point at one place; injectStyle puts both into the page.

export const ACCESS_CSS = `
/* the sentence is for screen readers (the caption says the same for sighted readers): out of sight, not display:none */
.bv-root .bv-description { position: absolute; width: 1px; height: 1px; margin: -1px; overflow: hidden;
  clip-path: inset(50%); white-space: nowrap; }
.bv-root .bv-alt-tables { margin: 8px 0; max-width: 100%; overflow-x: auto; }
.bv-root .bv-alt-tables table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums;
  margin: 0 0 10px; }
.bv-root .bv-alt-tables caption { text-align: left; font-weight: 600; padding: 2px 0; }
.bv-root .bv-alt-tables th, .bv-root .bv-alt-tables td { border: 1px solid #c8ccd0; padding: 2px 6px;
  text-align: right; white-space: nowrap; }
.bv-root .bv-alt-tables th[scope=row], .bv-root .bv-alt-tables thead th { text-align: left; background: #f3f4f6; }
/* the colour-blind palette (palette.mjs): the views read --bv-palette for their drawing */
.bv-colorblind .bv-root, .bv-colorblind .bv-corpus { --bv-palette: colorblind; }
/* a focus ring that every control and picture shows when reached by the keyboard, in the projector theme too */
.bv-root :focus-visible, .bv-corpus :focus-visible { outline: 3px solid #1d4ed8; outline-offset: 2px; }
`;
