// LTI Dynamic Registration's last step: tell the LMS that opened this page that the tool is registered
(window.opener || window.parent).postMessage({ subject: "org.imsglobal.lti.close" }, "*");
