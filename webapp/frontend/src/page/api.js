// The page's calls to the JSON API: same-origin, with the CSRF token on every request that has a body.
// Resolves to { ok, status, data, retryAfter } (data {} when the body is not JSON); rejects only when the
// server could not be reached. `fetchFn` is the browser's fetch (a stand-in in the tests).

export function makeApi(fetchFn, csrfToken) {
  return function api(method, url, body) {
    const options = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = csrfToken;
      options.body = JSON.stringify(body);
    }
    return fetchFn(url, options).then((response) =>
      response
        .json()
        .catch(() => ({}))
        .then((data) => ({
          ok: response.ok,
          status: response.status,
          data,
          retryAfter: Number(response.headers.get("Retry-After")) || null,
        })),
    );
  };
}

export function csrfToken(doc) {
  const meta = doc.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}
