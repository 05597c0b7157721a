import { Empty } from "../ui";

export function DevicesPage() {
  return (
    <Empty>
      <p>
        This page is not in the console yet; use the CLI (<code>simhost --help</code>) or the API reference at <a href="/docs">/docs</a>.
      </p>
    </Empty>
  );
}
