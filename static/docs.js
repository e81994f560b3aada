// Starts Swagger UI on /docs/ with the document named by the page; no validator badge (it would call out).
(() => {
  const root = document.getElementById('swagger-ui');
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.url,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: true,
    persistAuthorization: false,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    docExpansion: 'none',
  });
})();
