using System.Diagnostics;
using System.Globalization;
using System.Text;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// One request's headers as its application reads them at every point of its life where it can: its handler's start,
/// the end of its body, the response's <c>OnStarting</c>, its <c>OnCompleted</c> callbacks (one registered at the start,
/// which Kestrel runs last, and one registered as the handler returns, which it runs first), and hosting's end of the
/// request (<see cref="HostingEnds"/>), where tracing, APM and logging read them. The fuzz apps keep one per request and
/// put it in the case's transcript, so that a server that shows a request another request's headers at any of those
/// points diverges from Kestrel alone.
/// </summary>
/// <remarks>
/// At each point the application reads a few names first (a view answers those from its own fields, without copying
/// them into Kestrel's collection), then <c>Count</c>, then every header in enumeration order, names as stored, each with
/// its values in order: nothing is sorted or case-folded. The names read are fixed ones and, after the start, three the
/// request enumerated at its start, in another casing. The timeline is found again from the request's
/// <see cref="HttpContext.Items"/>; at hosting's end from the context hosting hands its observers, which also says which
/// request it is (path, and stream on HTTP/2), so a context that stood for another request by then would show.
/// </remarks>
internal sealed class HeaderTimeline
{
    /// <summary>Where a request keeps its timeline, in <see cref="HttpContext.Items"/>.</summary>
    public static readonly object Key = new();

    private static readonly string[] FixedNames = ["user-agent", "Accept", "COOKIE", "x-custom", "sec-ch-ua", "X-Tenant", "x-user"];

    private static readonly Func<object, Task> Starting = state => ((Point)state).ReadAsync();

    private readonly List<string> _points = [];
    private readonly string _identity;
    private string[] _names = FixedNames;
    private volatile bool _ended;

    private HeaderTimeline(string identity) => _identity = identity;

    /// <summary>Whether hosting's end of the request has been seen.</summary>
    public bool Ended => _ended;

    /// <summary>
    /// Starts the timeline of the request of <paramref name="context"/> at its handler's start: keeps it in the request's
    /// items, reads the headers, and registers the <c>OnStarting</c> and the first <c>OnCompleted</c> callbacks.
    /// <paramref name="identity"/> is how the transcript names the request (its path, its stream).
    /// </summary>
    public static HeaderTimeline Start(HttpContext context, string identity)
    {
        var timeline = new HeaderTimeline(identity);
        context.Items[Key] = timeline;
        timeline.Read("start", context);
        lock (timeline._points)
        {
            timeline._names = [.. FixedNames, .. LearnedNames(context.Request.Headers)];
        }

        context.Response.OnStarting(Starting, new Point(timeline, "on-starting", context));
        context.Response.OnCompleted(Starting, new Point(timeline, "on-completed (registered first, runs last)", context));
        return timeline;
    }

    /// <summary>The timeline <see cref="Start"/> kept in the request's items, if any.</summary>
    public static HeaderTimeline? Of(HttpContext context) =>
        context.Items.TryGetValue(Key, out object? timeline) ? timeline as HeaderTimeline : null;

    /// <summary>Reads the headers at the point of the handler's return: also registers the last <c>OnCompleted</c>
    /// callback, which Kestrel runs first.</summary>
    public void Returning(HttpContext context, string point)
    {
        Read(point, context);
        try
        {
            context.Response.OnCompleted(Starting, new Point(this, "on-completed (registered last, runs first)", context));
        }
        catch (InvalidOperationException e)
        {
            Add("on-completed (registered last)", "!" + e.GetType().Name);
        }
    }

    /// <summary>Reads the headers at hosting's end of the request, through the context hosting handed its observers;
    /// <paramref name="seenAs"/> is what else that context says of which request it is.</summary>
    public void End(HttpContext context, string? seenAs = null)
    {
        Read(seenAs is null ? "hosting-end" : $"hosting-end ({seenAs})", context);
        _ended = true;
    }

    /// <summary>Reads the request's headers at <paramref name="point"/>.</summary>
    public void Read(string point, HttpContext context)
    {
        string[] names;
        lock (_points)
        {
            names = _names;
        }

        // Whatever a read throws is what the application saw there; thrown on, it would end the request differently.
        string seen;
        try
        {
            seen = Describe(context, names);
        }
        catch (Exception e)
        {
            seen = "!" + e.GetType().Name;
        }

        Add(point, seen);
    }

    /// <summary>Every point read so far, one a line, under the request's identity.</summary>
    public string Transcript()
    {
        var text = new StringBuilder();
        text.Append("request ").Append(_identity).Append('\n');
        lock (_points)
        {
            foreach (string point in _points)
            {
                text.Append("  ").Append(point).Append('\n');
            }
        }

        if (!_ended)
        {
            text.Append("  (hosting's end of the request not seen)\n");
        }

        return text.ToString();
    }

    private void Add(string point, string seen)
    {
        lock (_points)
        {
            _points.Add(point + ": " + seen);
        }
    }

    private static string Describe(HttpContext context, string[] names)
    {
        HttpRequest request = context.Request;
        IHeaderDictionary headers = request.Headers;
        var text = new StringBuilder();
        text.Append(request.Path.Value);
        foreach (string name in names)
        {
            text.Append(" =").Append(name);
            Values(text, headers[name]);
        }

        text.Append(" #").Append(headers.Count.ToString(CultureInfo.InvariantCulture));
        foreach (KeyValuePair<string, StringValues> header in headers)
        {
            text.Append(" | ").Append(header.Key);
            Values(text, header.Value);
        }

        return text.ToString();
    }

    private static void Values(StringBuilder text, StringValues values)
    {
        text.Append('[').Append(values.Count.ToString(CultureInfo.InvariantCulture)).Append("]:");
        foreach (string? value in values)
        {
            text.Append(' ').Append(value ?? "(null)").Append(" ~");
        }
    }

    // The first, a middle and the last name the request enumerated at its start, each in another casing, to be read
    // by name at the later points.
    private static IEnumerable<string> LearnedNames(IHeaderDictionary headers)
    {
        string[] names = [.. headers.Keys];
        if (names.Length == 0)
        {
            return [];
        }

        return new[] { names[0].ToUpperInvariant(), names[names.Length / 2].ToLowerInvariant(), names[^1].ToUpperInvariant() }.Distinct(StringComparer.Ordinal);
    }

    private sealed record Point(HeaderTimeline Timeline, string Name, HttpContext Context)
    {
        public Task ReadAsync()
        {
            Timeline.Read(Name, Context);
            return Task.CompletedTask;
        }
    }
}

/// <summary>
/// Hosting's end of each request of one app, as its own <see cref="DiagnosticListener"/> ("Microsoft.AspNetCore", from
/// the app's services: not <see cref="DiagnosticListener.AllListeners"/>, which would see every test's hosts) reports it:
/// the event <c>Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop</c>, written as hosting disposes the request's context,
/// after Kestrel has run the response's <c>OnCompleted</c> callbacks, with the request's <see cref="HttpContext"/>. An
/// observer that says yes to every event makes hosting start an activity per request, and so raise it.
/// </summary>
internal sealed class HostingEnds : IObserver<KeyValuePair<string, object?>>, IDisposable
{
    /// <summary>The event hosting raises at the end of every request it started an activity for.</summary>
    public const string StopEvent = "Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop";

    private readonly Action<HttpContext> _atEnd;
    private readonly IDisposable _subscription;
    private long _count;

    private HostingEnds(DiagnosticListener listener, Action<HttpContext> atEnd)
    {
        _atEnd = atEnd;
        _subscription = listener.Subscribe(this, static (_, _, _) => true);
    }

    /// <summary>The events seen so far: proof that the hosting-end point was reached at all.</summary>
    public long Count => Interlocked.Read(ref _count);

    /// <summary>Calls <paramref name="atEnd"/> at hosting's end of every request of the app of <paramref name="services"/>.</summary>
    public static HostingEnds Subscribe(IServiceProvider services, Action<HttpContext> atEnd)
    {
        DiagnosticListener listener = services.GetRequiredService<DiagnosticListener>();
        if (listener.Name != "Microsoft.AspNetCore")
        {
            throw new InvalidOperationException($"the app's listener is {listener.Name}");
        }

        return new HostingEnds(listener, atEnd);
    }

    public void OnNext(KeyValuePair<string, object?> value)
    {
        if (value.Key == StopEvent && value.Value is HttpContext context)
        {
            Interlocked.Increment(ref _count);
            _atEnd(context);
        }
    }

    public void OnCompleted()
    {
    }

    public void OnError(Exception error)
    {
    }

    public void Dispose() => _subscription.Dispose();
}
