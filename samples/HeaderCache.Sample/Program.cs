var builder = WebApplication.CreateBuilder(args);
var app = builder.Build();
app.MapGet("/plaintext", () => "Hello, World!");
app.Run();
