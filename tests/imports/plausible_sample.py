"""A Plausible CSV export made by hand, in the files and columns Plausible writes (its
``Plausible.Exports.export_queries``), from ten sessions of one day (2024-03-01):

| #  | source | device  | browser | system     | country    | pages                     | s   | id |
|----|--------|---------|---------|------------|------------|---------------------------|-----|----|
| 1  | Google | Desktop | Chrome  | Windows 10 | DE (DE-BE) | / /pricing /blog /pricing | 120 | A  |
| 2  | Google | Desktop | Chrome  | Windows 10 | DE (DE-BE) | / /pricing /              | 60  | A  |
| 3  | Google | Mobile  | Safari  | iOS 17.4   | FR         | /blog /pricing            | 30  | B  |
| 4  | Google | Mobile  | Safari  | iOS 17.4   | FR         | /blog (a bounce)          | 0   | C  |
| 5  | Google | Desktop | Firefox | Linux      | DE (DE-BE) | /pricing (a bounce)       | 0   | D  |
| 6  | Direct | Desktop | Chrome  | Mac 14.4   | US (US-CA) | / /blog /pricing          | 90  | E  |
| 7  | Direct | Desktop | Chrome  | Mac 14.4   | US (US-CA) | /pricing /                | 40  | F  |
| 8  | Direct | Desktop | Firefox | Linux      | (none)     | / (a bounce)              | 0   | G  |
| 9  | Direct | Mobile  | Safari  | iOS 17.4   | US (US-CA) | / /pricing                | 20  | H  |
| 10 | Direct | Mobile  | Chrome  | Android 14 | FR         | /blog (a bounce)          | 0   | I  |

and two ``Signup`` events (sessions 1 and 6). Google brings 11 page views and Direct 9,
Desktop 14 and Mobile 6: the figures the rebuild once turned into 10/10 and 12/8. Session 8
has no country, so ``imported_locations`` holds 9 visits (Plausible leaves such sessions out).
"""

from __future__ import annotations

DAY = "2024-03-01"
SUFFIX = "_20240301_20240301.csv"

PLAUSIBLE_FILES = {
    "imported_visitors": (
        "date,visitors,pageviews,bounces,visits,visit_duration\n2024-03-01,9,20,4,10,360\n"
    ),
    "imported_sources": (
        "date,source,referrer,utm_source,utm_medium,utm_campaign,utm_content,utm_term,"
        "pageviews,visitors,visits,visit_duration,bounces\n"
        "2024-03-01,Google,google.com,,,,,,11,4,5,210,2\n"
        "2024-03-01,Direct / None,,,,,,,9,5,5,150,2\n"
    ),
    "imported_devices": (
        "date,device,visitors,visits,visit_duration,bounces,pageviews\n"
        "2024-03-01,Desktop,5,6,310,2,14\n"
        "2024-03-01,Mobile,4,4,50,2,6\n"
    ),
    "imported_browsers": (
        "date,browser,browser_version,visitors,visits,visit_duration,bounces,pageviews\n"
        "2024-03-01,Chrome,120.0,4,5,310,1,13\n"
        "2024-03-01,Safari,17.4,3,3,50,1,5\n"
        "2024-03-01,Firefox,126.0,2,2,0,2,2\n"
    ),
    "imported_operating_systems": (
        "date,operating_system,operating_system_version,visitors,visits,visit_duration,"
        "bounces,pageviews\n"
        "2024-03-01,Windows,10,1,2,180,0,7\n"
        "2024-03-01,GNU/Linux,,2,2,0,2,2\n"
        "2024-03-01,Mac,14.4,2,2,130,0,5\n"
        "2024-03-01,iOS,17.4,3,3,50,1,5\n"
        "2024-03-01,Android,14,1,1,0,1,1\n"
    ),
    "imported_locations": (
        "date,country,region,city,visitors,visits,visit_duration,bounces,pageviews\n"
        "2024-03-01,DE,DE-BE,2950159,2,3,180,1,8\n"
        "2024-03-01,FR,,0,3,3,30,2,4\n"
        "2024-03-01,US,US-CA,5391959,3,3,150,0,7\n"
    ),
    "imported_entry_pages": (
        "date,entry_page,visitors,entrances,visit_duration,bounces,pageviews\n"
        "2024-03-01,/,4,5,290,1,13\n"
        "2024-03-01,/blog,3,3,30,2,4\n"
        "2024-03-01,/pricing,2,2,40,1,3\n"
    ),
    "imported_exit_pages": (
        "date,exit_page,visitors,visit_duration,exits,bounces,pageviews\n"
        "2024-03-01,/pricing,5,260,5,1,12\n"
        "2024-03-01,/,3,100,3,1,6\n"
        "2024-03-01,/blog,2,0,2,2,2\n"
    ),
    "imported_pages": (
        "date,hostname,page,visits,visitors,pageviews,total_scroll_depth,"
        "total_scroll_depth_visits\n"
        "2024-03-01,shop.example,/,6,5,7,,\n"
        "2024-03-01,shop.example,/pricing,7,6,8,,\n"
        "2024-03-01,shop.example,/blog,5,5,5,,\n"
    ),
    "imported_custom_events": (
        "date,name,link_url,path,visitors,events\n2024-03-01,Signup,,,2,2\n"
    ),
}
