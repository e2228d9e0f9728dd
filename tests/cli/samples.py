"""Sample exports of Plausible and Umami, with the numbers the tests expect from them."""

from __future__ import annotations

PLAUSIBLE = {
    "imported_visitors_20240301_20240302.csv": (
        "date,visitors,pageviews,bounces,visits,visit_duration\n"
        "2024-03-01,8,25,4,10,600\n"
        "2024-03-02,2,3,1,2,30\n"
    ),
    "imported_pages_20240301_20240302.csv": (
        "date,hostname,page,visits,visitors,pageviews,scroll_depth,pageleave_visitors\n"
        "2024-03-01,shop.example,/a,8,7,15,,0\n"
        "2024-03-01,shop.example,/b,5,4,10,,0\n"
        "2024-03-02,shop.example,/,2,2,3,,0\n"
    ),
    "imported_entry_pages_20240301_20240302.csv": (
        "date,entry_page,visitors,entrances,visit_duration,bounces,pageviews\n"
        "2024-03-01,/a,5,6,300,2,12\n"
        "2024-03-01,/b,4,4,300,2,8\n"
        "2024-03-02,/,2,2,30,1,3\n"
    ),
    "imported_sources_20240301_20240302.csv": (
        "date,source,referrer,utm_source,utm_medium,utm_campaign,utm_content,utm_term,"
        "pageviews,visitors,visits,visit_duration,bounces\n"
        "2024-03-01,Google,google.com,,,,,,12,4,5,300,2\n"
        "2024-03-01,Direct / None,,,,,,,13,4,5,300,2\n"
        "2024-03-02,Newsletter,,newsletter,email,spring,,,3,2,2,30,1\n"
    ),
    "imported_locations_20240301_20240302.csv": (
        "date,country,region,city,visitors,visits,visit_duration,bounces,pageviews\n"
        "2024-03-01,DE,DE-BE,0,6,7,400,3,18\n"
        "2024-03-01,FR,,0,2,3,200,1,7\n"
    ),
    "imported_browsers_20240301_20240302.csv": (
        "date,browser,browser_version,visitors,visits,visit_duration,bounces,pageviews\n"
        "2024-03-01,Chrome,120.0,6,7,400,3,18\n"
        "2024-03-01,Microsoft Edge,,2,3,200,1,7\n"
    ),
    "imported_custom_events_20240301_20240302.csv": (
        "date,name,link_url,path,visitors,events\n"
        "2024-03-01,Signup,,/a,3,3\n"
        "2024-03-01,Outbound Link: Click,https://partner.example/,,1,1\n"
    ),
}

UMAMI_HEADER = (
    "website_id,session_id,visit_id,event_id,hostname,browser,os,device,screen,language,"
    "country,subdivision1,subdivision2,city,url_path,url_query,utm_source,utm_medium,"
    "utm_campaign,utm_content,utm_term,referrer_path,referrer_query,referrer_domain,page_title,"
    "gclid,fbclid,msclkid,ttclid,li_fat_id,twclid,event_type,event_name,tag,distinct_id,"
    "created_at,job_id"
)


def umami_row(event_id: str, path: str, kind: int, name: str, at: str, ref: str = "") -> str:
    referrer = f"/search,,{ref}" if ref else ",,"
    return (
        f"w1,s1,v1,{event_id},shop.example,chrome,Mac OS,desktop,1920x1080,en-US,DE,DE-BE,,"
        f"Berlin,{path},,,,,,,{referrer},Title,,,,,,,{kind},{name},,,{at},"
    )


UMAMI = (
    "\n".join(
        [
            UMAMI_HEADER,
            umami_row("e1", "/", 1, "", "2024-04-01 10:00:00", "www.google.com"),
            umami_row("e2", "/pricing", 1, "", "2024-04-01 10:01:00"),
            umami_row("e3", "/pricing", 2, "signup", "2024-04-01 10:02:00"),
            umami_row("e4", "/pricing", 3, "", "2024-04-01 10:03:00"),
        ]
    )
    + "\n"
)
