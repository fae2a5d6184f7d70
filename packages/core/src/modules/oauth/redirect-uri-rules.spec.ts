import { describe, expect, it } from 'vitest';
import { redirectUriProblem } from './redirect-uri-rules.js';

describe('redirectUriProblem', () => {
  it('accepts https, loopback http and reverse-domain private-use schemes', () => {
    for (const uri of ['https://app.example/cb', 'https://app.example/cb?x=1', 'http://127.0.0.1:8080/cb', 'http://[::1]/cb', 'http://localhost:3000/cb', 'com.example.app:/oauth2redirect']) {
      expect(redirectUriProblem(uri), uri).toBeNull();
    }
  });

  it('refuses relative URIs, fragments, user information, plain http and dangerous schemes', () => {
    for (const uri of ['/cb', 'https://app.example/cb#x', 'https://u:p@app.example/cb', 'http://app.example/cb', 'http://127.0.0.2.example/cb', 'javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'myapp:/cb', 'https://app.example/a b']) {
      expect(redirectUriProblem(uri), uri).not.toBeNull();
    }
  });
});
