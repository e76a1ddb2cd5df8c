// The chat page of the browser tests: the React quick start (packages/react/examples/quickstart.tsx,
// the very code the README shows), mounted as is.
import { createRoot } from "react-dom/client";
import { App } from "../../react/examples/quickstart.js";

createRoot(document.getElementById("root")!).render(<App />);
