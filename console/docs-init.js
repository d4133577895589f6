// Starts Swagger UI on this server's OpenAPI document. A file rather than an inline script:
// the /docs Content-Security-Policy allows scripts from this origin only.
const root = document.getElementById('swagger-ui');
window.SwaggerUIBundle({
  url: root.dataset.openapi,
  domNode: root,
  deepLinking: true,
  docExpansion: 'list',
  // The public validator badge would call out to another host.
  validatorUrl: null,
  persistAuthorization: false,
});
