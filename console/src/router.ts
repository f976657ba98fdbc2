// Owns navigation: the page and its parameters live in the address's hash (#/invoices?status=draft),
// so the service serves one file and the back button and bookmarks work.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string[];
  params: URLSearchParams;
}

function current(): Route {
  const hash = window.location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = hash.split('?');
  return {
    path: path.split('/').filter(Boolean).map(decodeURIComponent),
    params: new URLSearchParams(query),
  };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const onChange = () => setRoute(current());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function href(path: string, params: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) query.set(key, value);
  const text = query.toString();
  return `#/${path}${text ? `?${text}` : ''}`;
}

export function navigate(path: string, params: Record<string, string | undefined> = {}): void {
  window.location.hash = href(path, params);
}
