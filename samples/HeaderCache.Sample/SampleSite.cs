using System.Globalization;
using System.Text;

namespace HeaderCache.Sample;

/// <summary>
/// A small web site for a real browser (<c>benchmarks/browser</c>): three pages under <c>/site/</c>, each pulling
/// about 30 resources of the same origin (style sheets, scripts, images of several types, a font, two
/// <c>fetch()</c> calls with custom headers), and a form that posts. Every response carries an ETag and
/// <c>Cache-Control: no-cache</c>, so a reload revalidates each resource with <c>If-None-Match</c>, as
/// browsers do against real sites. The pages then walk themselves through reloads, navigations and the form.
/// </summary>
internal static class SampleSite
{
    private static int s_walksDone;

    private static readonly string[] Styles = ["base", "layout", "theme", "print"];
    private static readonly string[] Scripts = ["vendor", "runtime", "app", "analytics", "widgets", "lazy"];
    private static readonly string[] Images =
    [
        "hero.jpg", "logo.svg", "avatar.png", "banner.webp", "icon-home.svg", "icon-cart.svg",
        "thumb-1.jpg", "thumb-2.jpg", "thumb-3.png", "spinner.gif", "badge.webp", "footer.png",
    ];

    // What each page does once loaded, by step: a reload, another page, the form, and so on.
    private const string Walk = """
        addEventListener('load', async () => {
          const headers = { 'X-Requested-With': 'XMLHttpRequest', 'X-Client-Version': '2.4.1' };
          await fetch('/site/api/items?page=1', { headers });
          await fetch('/site/api/user', { headers: { ...headers, 'X-CSRF-Token': 'c5f1e0d2a9b84c7e' } });
          const step = Number(sessionStorage.getItem('step') || '0');
          sessionStorage.setItem('step', String(step + 1));
          const next = ['reload', 'page2', 'reload', 'page3', 'reload', 'form', 'reload', 'page2'][step];
          if (next === 'reload') location.reload();
          else if (next === 'form') document.getElementById('search').submit();
          else if (next) location.href = '/site/' + next;
          else { await fetch('/site/done'); document.title = 'done'; }
        });
        """;

    /// <summary>Answers a request under <c>/site/</c>.</summary>
    public static Task HandleAsync(HttpContext context)
    {
        HttpRequest request = context.Request;
        string path = request.Path.Value is { Length: > 6 } value ? value[6..] : "";
        if (HttpMethods.IsPost(request.Method) && path == "form")
        {
            // Post/redirect/get, as sites answer a form.
            context.Response.StatusCode = StatusCodes.Status303SeeOther;
            context.Response.Headers.Location = "/site/page1?from=form";
            return Task.CompletedTask;
        }

        if (path is "done" or "done-count")
        {
            // The last step of a walk reports itself, so a driver without a debugging protocol knows when to stop.
            int done = path == "done" ? Interlocked.Increment(ref s_walksDone) : Volatile.Read(ref s_walksDone);
            return context.Response.WriteAsync(done.ToString(CultureInfo.InvariantCulture));
        }

        (string type, string body)? resource = path switch
        {
            "page1" or "page2" or "page3" => ("text/html; charset=utf-8", Page(path)),

            // The site's address, where the README sends a browser: the first page, whose walk goes on from there.
            "" => ("text/html; charset=utf-8", Page("page1")),
            "font.woff2" => ("font/woff2", "wOF2"),
            "api/items" => ("application/json", """{"items":[1,2,3]}"""),
            "api/user" => ("application/json", """{"name":"sample"}"""),
            _ when path.StartsWith("static/", StringComparison.Ordinal) && path.EndsWith(".css", StringComparison.Ordinal) => ("text/css", "body{margin:0}"),
            _ when path.StartsWith("static/", StringComparison.Ordinal) && path.EndsWith(".js", StringComparison.Ordinal) => ("text/javascript", "void 0;"),
            _ when path.StartsWith("img/", StringComparison.Ordinal) => (ImageType(path), "img"),
            _ => null,
        };
        if (resource is not { } found)
        {
            context.Response.StatusCode = StatusCodes.Status404NotFound;
            return Task.CompletedTask;
        }

        string etag = "\"" + ((uint)string.GetHashCode(path, StringComparison.Ordinal)).ToString("x8", CultureInfo.InvariantCulture) + "\"";
        context.Response.Headers.ETag = etag;
        context.Response.Headers.CacheControl = "no-cache";
        if (request.Headers.IfNoneMatch == etag)
        {
            context.Response.StatusCode = StatusCodes.Status304NotModified;
            return Task.CompletedTask;
        }

        context.Response.ContentType = found.type;
        return context.Response.WriteAsync(found.body);
    }

    private static string ImageType(string path) => Path.GetExtension(path) switch
    {
        ".jpg" => "image/jpeg",
        ".png" => "image/png",
        ".svg" => "image/svg+xml",
        ".gif" => "image/gif",
        _ => "image/webp",
    };

    private static string Page(string name)
    {
        var html = new StringBuilder("<!doctype html><html><head><meta charset=\"utf-8\"><title>")
            .Append(name)
            .Append("</title><style>@font-face{font-family:s;src:url(/site/font.woff2)}body{font-family:s}</style>");
        foreach (string style in Styles)
        {
            html.Append("<link rel=\"stylesheet\" href=\"/site/static/").Append(style).Append(".css\">");
        }

        foreach (string script in Scripts)
        {
            html.Append("<script defer src=\"/site/static/").Append(script).Append(".js\"></script>");
        }

        html.Append("</head><body><h1>").Append(name).Append("</h1>");
        foreach (string image in Images)
        {
            html.Append("<img src=\"/site/img/").Append(image).Append("\" width=\"16\" height=\"16\" alt=\"\">");
        }

        return html.Append("<form id=\"search\" method=\"post\" action=\"/site/form\"><input name=\"q\" value=\"kestrel\"></form><script>")
            .Append(Walk)
            .Append("</script></body></html>")
            .ToString();
    }
}
